// Package lease is Tenure's reference per-endpoint lease manager: a fleet of instances shares the
// polling of many endpoints so that each endpoint is polled by one instance at a time, the work is
// spread evenly, and an endpoint whose holder dies is taken over within one lease TTL of the death.
//
// # How it works
//
// Every endpoint has a lease key <prefix>lease:<endpoint> whose value names the holding, not just the
// process: <instance ID>:<nonce>, where the nonce is new for every acquire attempt (the manager's start
// time and an attempt counter) and stays the same across go-redis re-sends of that attempt. The key's
// TTL is LeaseTTL. Instances announce themselves with a heartbeat key <prefix>node:<id> (and a "join"
// on the pub/sub channel) and register in the fleet registry <prefix>nodes with every heartbeat; they
// find each other by reading the registry, then the PTTL of each candidate's heartbeat (a candidate
// whose heartbeat is gone is not alive). A discovery round reads the registry at its first round, while
// its link recovers, after an instance vanished unannounced (and then at every round for one
// HeartbeatTTL), at every round while the fresh-dataset guard may hold grants (a lost dataset took the
// registry with it, and the survivors write it again over a HeartbeatInterval), and every six
// DiscoveryIntervals; otherwise it reads the heartbeats it knows and those
// announced since. An instance whose announcement was lost is found by the next periodic read: balance
// suffers until then, never safety. One that comes back from a stretch longer than HeartbeatTTL without
// a heartbeat (a paused process, a starved loop; a link that went unhealthy recovers the same way, see
// Link health) announces itself again as it writes the next, after a new subscription, a discovery
// round and one more heartbeat (the one that showed the lapse may have landed before the pause and
// expired during it): the others may have counted it gone and taken its share. Targets come from a TargetSource (by default the session:<id> keys in Redis,
// which are only ever read, in full only when the application's change counter or the server moved:
// see SessionSource). Each instance computes the same bounded-load rendezvous assignment (see
// Assign) over the live instances, acquires the endpoints assigned to it, renews all its leases in one
// pipelined pass per RenewInterval (256 leases per round trip), and polls each held endpoint every
// PollInterval. A holder that is no longer preferred finishes its in-flight poll, releases (the
// releases of a rebalancing share round trips: those queued while one is in flight go in the next), and
// announces the release on the <prefix>events pub/sub channel so that the preferred instance acquires within milliseconds. An
// instance that hears a release of an endpoint its own view gives to another runs a discovery round
// (coalesced as joins are): the releaser may have seen a change of the targets or the fleet first, and
// the endpoint may be the hearer's in that newer view. A holder
// that dies announces nothing: the others read when its heartbeat and its leases expire (PTTL) and act
// at those moments (see Taking over below).
//
// Keys: <prefix>lease:<endpoint> (holding value, TTL LeaseTTL), <prefix>fence:<endpoint> (last
// fencing token, TTL max(24h, 100*LeaseTTL) from the last grant), <prefix>node:<instance> ("1", TTL
// HeartbeatTTL), <prefix>nodes (sorted set of the instance IDs that wrote a heartbeat, each pruned an
// hour after its last heartbeat expired: see nodeKeys), <prefix>epoch ("<end of the fresh-dataset guard in Redis microseconds> <run_id>", no
// TTL: one key per prefix). Every key is bounded: endpoints that are gone leave nothing behind for
// longer than the fence TTL. Scripts documents the Lua conventions. Renew and
// release touch one key each; acquire also touches the fence counter and the epoch key. Those names
// are the single layout; the cluster layout is below.
//
// # Key layouts
//
// Config.KeyLayout chooses how an endpoint's keys are named. LayoutSingle, the default, is the layout
// above: the three keys acquire touches lie in three hash slots, which one Redis primary (alone, or
// with replicas and Sentinel) does not mind and Redis Cluster refuses (CROSSSLOT). LayoutCluster makes
// the endpoint a hash tag and gives it an epoch key of its own: <prefix>lease:{<endpoint>},
// <prefix>fence:{<endpoint>}, <prefix>epoch:{<endpoint>} (TTL the fence TTL, set by every grant and
// set again by the holder, a PEXPIRE sent with its renewals once every half fence TTL, so that it
// never expires while a lease it guards can be live: an endpoint held for longer than the fence TTL
// keeps its epoch, and its next grant is not held back by a guard).
// Every script then touches one slot, and an endpoint's lease, fencing counter and guard live on the
// shard that serves it and move with its slot. Heartbeats, the registry and the channel are separate
// commands, which a cluster client routes one by one. The KeyPrefix must then hold no '{' or '}', and
// an endpoint ID must not begin with '}' (its keys would hash whole, to different slots).
//
// The guard and fencing per shard. A shard's primary can be lost and its replica promoted; the replica
// may lack the last writes (an acknowledged grant, a renewal, fencing increments), exactly as a
// restart from an older snapshot lacks them. The guard treats both alike because it binds each epoch
// to the run_id of the server that wrote it, read by the acquire script itself: the epoch key the
// replica holds names the old primary's run_id (replication copies the key's value, and every process
// has its own run_id), so the promoted replica's first acquire for each endpoint re-arms that
// endpoint's guard and grants nothing for one LeaseTTL, by which time every holder of a lost grant has
// stopped. Holders whose leases did reach the replica keep renewing them. Fencing tokens stay above
// every lost one for the same reason as after a restart: a token is max(counter+1, Redis TIME in µs),
// the first grant after a promotion is at least one LeaseTTL after it, and every lost token was issued
// before it, so tokens keep increasing as long as the shards' clocks differ by less than LeaseTTL.
//
// A slot migration (MIGRATE keeps values and TTLs) moves epoch keys that name the source's run_id, so
// the target's first acquire of each moved endpoint re-arms its guard once: renewals go on across the
// move (TestClusterRenewalsGoOnWhileSlotMigrates), grants of those endpoints wait one LeaseTTL.
//
// The price of per-endpoint guards: an endpoint whose epoch key is missing (its first grant ever, or
// none held for the fence TTL) waits one LeaseTTL before its first grant, as in the single layout a whole
// new dataset does; MarkEstablishedEndpoints skips that wait where it is known to be safe. Instances
// refused by one endpoint's guard go on acquiring the others.
//
// Waiting for replicas. With Config.WaitReplicas = n, every batch of grants and renewals ends with
// WAIT n on the same connection, bounded by the call's OpTimeout, and a grant or renewal that WAIT does
// not report on n replicas counts as failed (fail closed). A belief then rests on a write that n
// replicas had received, so promoting one of them keeps it. It does not make Redis consistent: a
// failover may still promote a replica that had not acknowledged (n below the number of replicas, or
// a replica that lagged), replicas acknowledge receipt and not durability, and a primary isolated from
// its sentinels but not from its clients and replicas goes on acknowledging while another is elected.
// The guard still treats every promotion as a restart. Not with a ClusterClient (WAIT counts one
// connection's writes; a cluster pipeline has one per shard). See wait.go.
//
// Why an option and not a new layout for everyone: the two layouts name different keys, so instances
// of one do not see the leases of the other, and a fleet upgraded one instance at a time across a
// change of layout would poll every endpoint twice until the last old instance stopped. Deployments on
// one primary therefore keep their keys and need no migration. To move a fleet to the cluster layout
// (for instance before moving to Redis Cluster): stop every instance of the old layout (Stop releases
// their leases), then start the new ones, which wait out each endpoint's guard; never run both
// layouts on one KeyPrefix at once. A go-redis ClusterClient learns a promoted primary from a MOVED
// reply or from its periodic state reload, and a killed primary sends no MOVED: the manager's probe of a
// primary it marked down asks the client to reload its slot map, so the promoted replica is found within
// a probe (RenewInterval/2 and an OpTimeout) whatever the setting; still set ClusterStateReloadInterval
// to a fraction of LeaseTTL (the default, 60s since go-redis v9.22, leaves the calls that name no
// endpoint — heartbeat, discovery — dialling a dead primary for a minute).
//
// # States
//
// Each endpoint is, on each instance, in one of four states, and only the transitions between them
// write its keys: free; acquiring (an acquire call with a new holding value is in flight); held (a
// holding: value, fencing token, local deadline, polls); releasing (the belief has ended and the
// release of that holding's value is in flight). An endpoint is acquired only from free, so never
// while its own release is in flight; a handoff requested while the endpoint is held is cancelled if
// the endpoint is assigned back before the in-flight poll ends. When a holding ends without a
// confirmed release (renewal failed, deadline passed, release failed), or an acquire gets no usable
// reply, its value may remain in Redis. The endpoint remembers every such value until a release of it
// is answered, a grant shows it gone, or it is old enough to have expired (2*LeaseTTL); the next
// acquire attempt releases each (compare-and-delete) just before acquiring, in the same pipeline, so
// the instance need not wait for them to expire (Stop releases every such value with its leases, so
// the next owner need not wait either). Renew and release compare the whole
// holding value, so a late or re-sent renewal or release of one holding never touches another, even
// one of the same instance.
//
// The manager itself goes New → Starting → Running → Stopping → Done, each transition guarded by one
// mutex: Start only from New, Stop from Starting (Start gives up), Running, or Done after a crash.
//
// # Starting and stopping
//
// Start retries until Redis answers or its context ends (backoff from 100ms doubling to
// RenewInterval, jittered from Config.Rand, on Config.Clock; each failure is logged and counted), so
// a fleet started while Redis is busy or restarting comes up when Redis does.
//
// The context given to Start is the manager's lifetime: cancelling it is a crash (polls end at once,
// nothing is sent). Stop is the graceful end. It hands each endpoint over at its own limit: one with
// no poll in flight is released at once, one with a poll in flight as soon as that poll has returned
// (releases ready together share a round trip), so no endpoint waits for the instance's slowest poll;
// meanwhile the heartbeat is deleted and the stop announced, so that the others count the instance
// out and take each endpoint when its release is announced. The usual shutdown, a signal-cancelled context passed to
// Start and then Stop, therefore first crashes and then hands over: Stop after a crash waits for the
// cancelled polls to return, then releases every lease the crash left in Redis (compare-and-delete on
// the holding values, so nothing held by others is touched), deletes the heartbeat and notifies the
// fleet, which takes over within milliseconds instead of one TTL. See the Manager.Stop example. Stop
// deletes the heartbeat only after any heartbeat write in flight has ended, so a stopped instance is
// never counted alive again.
//
// # What is guaranteed, and under which assumptions
//
// Single poller. While a poll's context is live, no other instance of the fleet holds the endpoint's
// lease, provided that:
//
//   - every instance's clock runs at a rate within DriftBound of Redis's clock (the bound applies to
//     rates, not to absolute time: wall-clock steps on the instances do not matter because deadlines
//     use the monotonic reading of Config.Clock);
//   - the Redis host's clock is slewed, never stepped: Redis expires keys and answers TIME from its
//     wall clock, so a step forward expires every lease early (while holders still believe) and a step
//     back can make fencing tokens go backwards once a counter has expired. Run NTP/chrony in slew
//     mode on the Redis host (e.g. chrony without makestep after boot);
//   - Redis does not lose an acknowledged write except by a restart or a failover to another server
//     (which the fresh-dataset guard below detects by the server's run_id), and does not evict keys
//     (maxmemory-policy noeviction); in particular a failover that keeps the old primary's process
//     serving writes (a primary cut off from its replicas and sentinels but not from clients) is
//     outside these assumptions: nothing the client can see distinguishes its acknowledged writes from
//     those that will survive;
//   - the PollFunc stops touching the endpoint promptly once its context is done (within SafetyMargin).
//
// The reason: a grant or renewal confirmed by a request sent at local time t0 is believed only until
// t0 + LeaseTTL*(1-DriftBound) - SafetyMargin, which precedes the key's expiry in Redis; a reply that
// arrives late never extends a belief; a renewal that fails or times out ends the belief at once (fail
// closed: the lease may still be ours; the next acquire attempt releases that holding's value first
// and then acquires anew, with a new token).
//
// The deadline arithmetic is confirmedDeadline: counted from the send time, shrunk by the drift bound
// and the margin, never moved back, and a reply that arrives at or after the current deadline (or the
// one it would set) ends the belief rather than extending it.
//
// Fencing. A process can be paused (GC, SIGSTOP, VM migration) between the deadline check and the
// poll, after which it believes a lease it no longer has. No lease design prevents that; fencing tokens
// let the resource refuse such a zombie. Every grant carries a token larger than every earlier token
// for that endpoint: max(previous+1, Redis TIME in microseconds). Tokens keep increasing across a
// Redis restart with an empty dataset, and after a fence counter has expired, as long as Redis's wall
// clock does not step back (see the assumptions). Each holding has its own token: re-acquiring after a
// failed renewal yields a new, larger token.
//
// Fresh-dataset guard. A Redis that restarts forgets leases while old holders still believe in theirs:
// all of them if it restarts empty, the newer ones if it loads an RDB snapshot or an AOF that is older
// than the leases (redis-server's default configuration writes RDB snapshots, and every snapshot holds
// the epoch key). The guard is bound to the server process, not to the data: the epoch key holds the
// server's run_id, which the acquire script reads itself (INFO server; Redis 7 lets scripts call it,
// and scripts are replicated by their effects). When the key is missing (first use, FLUSHALL, a
// restart with nothing to load) or names another run_id (any restart, whatever it loaded, or a
// failover to another server), the script re-arms the guard: it writes a new epoch and grants nothing
// to anyone until one LeaseTTL has passed on Redis's clock, by which time every old holder's local
// deadline has passed (given the drift bound). Reading the run_id inside the script, rather than
// passing a value the client read earlier, leaves no window in which a restart between the read and
// the acquire goes unnoticed. On a server whose scripts cannot read INFO (e.g. miniredis) the guard
// falls back to the epoch key alone, which covers empty restarts and FLUSHALL only. The first start on
// an empty Redis therefore waits one TTL before the first grant; MarkEstablished skips that wait where
// it is known to be safe. An instance refused by the guard reads when it ends (the epoch key and Redis
// TIME, one round trip), sends no acquire until then, and acquires at that moment rather than at its
// next tick.
//
// Idempotence. go-redis re-sends a command whose reply was lost. Acquire returns the same token if the
// lease already holds the attempt's value, renew and release compare the holding's value, so a
// re-send changes nothing, and a re-send (or any late delivery) of an earlier holding's release
// cannot delete a later holding. Every
// Redis call is bounded by OpTimeout through its context; create the client with
// ContextTimeoutEnabled so that the bound also applies to socket reads.
//
// Balance and liveness. When every instance sees the same fleet and the same targets, each owns
// floor(E/N) or ceil(E/N) endpoints. After a graceful Stop its endpoints move within milliseconds;
// after a crash, within max(LeaseTTL, HeartbeatTTL) of the crash plus a few round trips, which is one
// LeaseTTL with the defaults (see Taking over). These are liveness bounds, not safety properties: they
// depend on Redis being reachable.
//
// # Taking over
//
// The earliest moment anyone may take a dead holder's endpoint is the expiry of its lease key, at most
// one LeaseTTL after the death (its last renewal was sent before). Two expiries gate a takeover: the
// heartbeat's, which changes the assignment (until then the dead instance is still preferred), and the
// lease's, which lets the acquire succeed. Neither is waited for by polling. Each discovery round reads
// the PTTL of every other instance's heartbeat in one pipelined round trip and schedules the next round
// at the first expiry (plus 2 ms); each acquire pass reads the PTTL of the lease keys that refused it,
// leaves each of those endpoints out of later passes until its own expiry (or an announced release,
// or a recovery of the link, which may have lost announcements),
// and schedules the next pass at the first expiry (plus 2 ms). Both schedules run on Config.Clock. The
// instance the new assignment prefers therefore acquires within a round trip of the later of the two
// expiries and polls at once: with HeartbeatTTL ≤ LeaseTTL (the defaults have them equal) that is
// within one LeaseTTL of the death.
//
// Every instance of the fleet runs the scheduled round at the same moment, so it is kept small: it
// reads only the heartbeats whose expiry has come (one, for one death), keeps the targets of the last
// assignment, and leaves the registry read that follows a vanished instance to the next rounds; the
// assignment without the instances due then is computed 100 ms before (ownShare: each instance keeps
// the targets' hash order and every endpoint's eight best-scoring instances, so a fleet change costs
// one score per endpoint and changed instance). At 100 instances and 10,000 endpoints on two cores,
// a full round at that moment (20,000 PTTLs over the fleet and 100 assignments of about 2 ms each)
// delayed acquires by 100–300 ms.
//
// Why this design and not others. Only the preferred instance tries, so a takeover creates no
// contention and needs no rebalancing afterwards; an attempt that comes too early (the holder renewed
// after the PTTL was read) is refused like any other and rescheduled from a fresh PTTL, so the cost is a
// PTTL per refused endpoint and per other instance, not a poll loop. Keyspace expiry notifications
// would need a server setting, and Redis sends them only when it actually removes the key, lazily on
// access or by its sampling expiry cycle (up to tens or hundreds of milliseconds late), so a schedule
// would be needed behind them anyway. A lease can expire before its dead holder's heartbeat (its last
// renewal came up to one RenewInterval before its last heartbeat); acquiring it then, while the
// assignment still names the dead holder, would need a successor chosen outside the assignment and a
// way to tell a dead holder from a live one before its heartbeat expires (a missed beat, read by more
// frequent heartbeat reads). With equal TTLs that would gain at most one RenewInterval and never change
// the bound of one LeaseTTL after the death, so this design does not do it. The limit it leaves: a
// HeartbeatTTL longer than LeaseTTL delays a takeover until the heartbeat expires.
//
// Safety does not depend on any of this: the schedules only decide when an ordinary acquire is sent.
// The acquire script still refuses while the key exists, the fresh-dataset guard still refuses every
// grant for one TTL after a new dataset, tokens still come from the script, and the new holder believes
// only until its local deadline, counted from its own send time.
//
// Link health. A request whose reply is lost may still have taken effect, so an instance that stops
// hearing from Redis stops writing rather than keep its keys alive blindly (under a one-way
// partition blind renewals and heartbeats would keep its endpoints from everyone, unpolled). The
// link becomes unhealthy when a call ends without a reply: a timeout or a network error (a Redis
// error reply or redis.Nil is a reply and does not count; one such call is enough, including one
// pipelined batch). While unhealthy the instance sends no heartbeat, acquisition or renewal and
// runs no discovery; the leases it still holds (a failed renewal has already ended those of its
// batch) are polled only until their local deadlines.
// Every RenewInterval/2 it sends PING, bounded by OpTimeout; once a PING is answered it subscribes to
// the channel anew (a new connection, whose confirmation it awaits within OpTimeout: announcements
// published while the old subscription was cut off are lost, and go-redis restores a subscription on
// its own schedule, seconds later), forgets when the leases that refused it expire (their releases
// may be among the lost announcements), writes its heartbeat, runs one discovery round, becomes
// healthy, announces itself and runs one renewal pass and one acquire pass (pipelined, for the
// endpoints its fresh view assigns it; the others hand their share over by the ordinary rebalance,
// and their release announcements reach the new subscription). A subscription that go-redis restores
// on its own while the link stays healthy (its connection reset, no call failed) is met the same way
// once its confirmation arrives: the expiries that refused it are forgotten, and a discovery round and
// an acquire pass follow. Releases and Stop's clean-up are still
// sent while unhealthy (each bounded by OpTimeout): they only delete this instance's keys. Bound:
// let tf be the end of the first unanswered call, at most HeartbeatInterval + OpTimeout after
// replies stop (a heartbeat is sent at least that often). No write starts after tf, and one already
// under way ends within OpTimeout (go-redis re-sends only within the call's bound), so the
// instance's keys are gone from Redis by tf + OpTimeout + max(LeaseTTL, HeartbeatTTL), and the
// others poll its endpoints a few round trips later (see Taking over): with the defaults, 33s after the
// first failure and 46s after replies stop, even when its requests still reach Redis (one-way
// partition).
//
// Link health on Redis Cluster is judged per primary (a ClusterClient with the cluster layout; see
// link.go). Every key of an endpoint lies in one slot, so a call left without a reply is blind only
// about the endpoint it named, on the shard it went to; fencing the whole instance off for it would
// end the leases of every shard because one shard's primary died. So each batch of acquisitions or
// renewals is split by the primary serving each endpoint, and each shard's part goes in a pipeline of
// its own and is settled as soon as its replies are in (a single pipeline across the shards waited
// for the dead node, and go-redis then failed every command in it with the dead node's timeout,
// healthy shards' renewals included). A call without a reply marks its primary down: its own lease
// fails closed at once, as before, and until a PING to that primary is answered, or the client sees
// the slot served by another node (a promoted replica), no acquisition, renewal or heartbeat goes
// there (the fleet registry's entry, which only names candidates, may), and the leases it serves run
// out at their local deadlines. The other shards' endpoints are renewed and polled throughout
// (TestClusterPrimaryKillSparesOtherShards). The single layout's bound carries over primary by
// primary: no write goes to a primary after tf there, so a one-way partition of the instance still
// lets its heartbeat expire and its endpoints be taken over (TestClusterOneWayPartitionHandsOver); the
// one batch of acquisitions that may land blind on a primary before it is marked down holds those
// endpoints for one more LeaseTTL at most. Calls that name no endpoint's key
// (discovery reads, publishing, the PTTL and guard reads that time a takeover) do not count: they only
// delay balance or a takeover until their next round.
//
// The price: an instance cut off from one primary only, while its heartbeat lives on another shard it
// still reaches, stays live in the fleet's eyes, so the endpoints of the unreachable shard that the
// assignment gives it are polled by nobody until the cut heals or its slots move (a partition of the
// whole instance hands over as in the single layout). Telling that cut from the death of the primary,
// which every instance sees and the cluster answers with a promotion, is not done.
//
// Not guaranteed: single polling when the assumptions above fail (use fencing), any bound while Redis
// is unreachable (polling stops, by design), and balance while instances disagree about the fleet.
//
// # Observability
//
// Log events (log/slog, attributes instance, endpoint, token, reason): "acquire ok" (info), acquire
// failures (debug when held by another or refused by the guard, warn on errors), "renew ok"
// (debug), "holding grants until <time>: fresh dataset" (info, once per guard, attribute until: the
// latest time the guard can end), "start attempt failed" (warn, attributes attempt and retry_in), "renew failed" (warn), "release handoff|target-removed|stopped" (info), "release
// lost|renew-failed|expired" (warn), "redis link unhealthy" (warn, attribute op: the call that
// went unanswered) and "redis link healthy again" (info); on Redis Cluster "redis node unreachable"
// (warn, attributes node and op) and "redis node reachable again" (info, attribute nodes) instead.
// Config.Observe receives the same belief
// changes as Events, plus an EventRenewed for every confirmed renewal that moves a deadline; acquired
// and renewed events carry the local deadline (Event.Until). Prometheus collectors are registered on Config.Registerer only, labelled
// instance=<ID>: tenure_lease_held (gauge),
// tenure_lease_acquisitions_total{result="ok|held|guard|error"},
// tenure_lease_renewal_failures_total, tenure_lease_releases_total{reason},
// tenure_lease_handoff_seconds (histogram: from a release notification to taking the released
// lease), tenure_lease_link_healthy (gauge, 1 or 0; on Redis Cluster 0 while any primary is down),
// tenure_lease_link_unhealthy_total (transitions to unhealthy; on Redis Cluster, of a primary to
// down) and tenure_lease_start_retries_total (failed start attempts retried).
package lease
