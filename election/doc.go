// Package election is leader election for a fleet: for each role, at most one instance acts as leader at
// a time, and a standby takes over when the leader stops, crashes or loses its backend.
//
// # Patterns
//
//   - Continuous: New + Start; IsLeader, Leader, State, Term, Events; callbacks OnStartedLeading (with a
//     leader context), OnStoppedLeading, OnNewLeader; Stop hands off gracefully, also after the context
//     given to Start has ended (signal.NotifyContext, then Stop); that context ending without a Stop is
//     a crash, and the holding ends as the backend's rules say.
//   - One-shot: RunOnce runs a function only if the role can be had now, then releases it.
//   - Leader-only: LeaderOnly wraps a function so it runs only while an Elector leads.
//   - Several roles: one Elector per role; they may share a Backend and a prometheus.Registerer.
//
// States go Follower (someone else leads) → Candidate (nobody known to lead; contending) → Leader.
//
// # Backends
//
// RedisBackend (SET NX PX semantics in Lua, compare-and-renew, compare-and-release, pub/sub release
// hints) and PostgresBackend (session advisory lock on a dedicated connection per role, a visibility table
// with lease_until, LISTEN/NOTIFY release hints). Both satisfy Backend, which a harness may wrap.
//
// # What is guaranteed, and under which assumptions
//
// A holding acquired or renewed by a request sent at local time t is acted on only until
// t + TTL·(1-DriftBound) - SafetyMargin on the elector's Clock: the leader context is cancelled at that
// deadline unless a renewal sent later has been confirmed, whatever a pending request does, and at once
// when a renewal fails or times out (fail closed). The backend keeps the holding for TTL from the moment
// it processed the request, which is no earlier than t. So, provided
//
//   - the clocks of the elector and of the backend run at rates that differ by less than DriftBound,
//   - leader work stops within SafetyMargin of its context's cancellation,
//   - the backend does not lose a holding while it is valid (Redis: see the fresh-dataset guard below;
//     a Redis replica promoted without the key breaks this, as does a failover of PostgreSQL),
//
// no two electors act as leader of a role at the same moment. Each leadership carries a term (fencing
// token) greater than every earlier term of that role, including across a Redis restart with an empty
// dataset (Redis terms are the server's clock in µs, raised above the last term seen: a restart that
// also loses the term key relies on that clock not stepping back); a resource that rejects writes with
// a term lower than one it has seen stays safe even when the assumptions above fail. The package cannot
// fence on its own: pass the term to the resource.
//
// # Backend clocks must slew, not step
//
// The backend's clock is part of the argument. Redis expires keys and computes the fresh-dataset grace
// and the terms from its own clock (key expiry, TIME); PostgreSQL compares lease_until with now(). A
// step forward on the backend host ends a holding early (a standby is granted the role while the
// leader is inside its local deadline); a step back can repeat a term after the term key is gone and
// stretch the grace. DriftBound covers rate errors only: run the backend host with a time daemon that
// slews (chronyd, ntpd -x, systemd-timesyncd with small corrections), never one that steps while the
// backend serves elections, and do not set its clock by hand.
//
// # Holding identity
//
// A holding is identified by the instance and its term, and every term is granted once. Renew and
// Release compare both, so a late or re-sent release (go-redis re-sends a command whose reply was
// lost) of an earlier holding never ends a later holding of the same instance, as happens when one
// instance ID is reused (RunOnce with a fixed ID, a restarted process). A new acquire attempt by an
// instance that still has an earlier holding on the backend is not handed that holding back: Redis
// refuses it until the earlier holding is released or expires (the attempt nonce tells a re-send of
// one attempt from a new attempt); PostgreSQL confirms the earlier holding on the server and reissues
// it with a new term. The Elector also refuses to lead with a term not above its previous one.
//
// An acquire or renewal whose reply was lost may still land, after its caller gave up (held on the wire,
// or queued in a paused server after the release that followed the loss failed): the role is then held
// by an instance that does not lead, and refused to everyone, that instance included. A candidate the
// backend names as holder of a term it does not lead releases that term and contends again at once, so
// such a write costs the role the time to the candidate's next attempt, not a TTL. A leader that loses
// its holding contends again at once (a link that is down fails the attempt's probe, and RetryInterval
// applies): a holding that Redis lost is found by that attempt, which arms the fresh-dataset guard
// within a renewal interval and a call bound of the loss.
//
// Retries (RetryInterval) and renewals (RenewInterval) each wait up to a tenth less than their interval,
// drawn from Config.Rand, so that candidates and leaders do not stay in phase.
//
// # Fresh-dataset guard (Redis)
//
// A Redis that loses holdings while their holders are inside their local deadlines (a restart without
// persistence; a restart that loads an RDB or AOF snapshot older than the holdings, and redis-server
// writes RDB snapshots by default; FLUSHALL) would grant the role at once to a standby. Each role's
// epoch key records the server run (run_id, read by the acquire script from INFO server) for which the
// guard was last armed. An acquire that finds the epoch key missing, or naming another run, arms the
// guard anew: nobody is granted the role for one TTL, by which time every holder from before the loss
// is past its deadline (its holding was confirmed before the loss, and the grace starts after it). Why
// run_id: it is drawn anew at every start of redis-server and is never in a snapshot, so a restart
// re-arms the guard whatever it loaded, while a server that keeps running never re-arms it without
// cause; a key written by the client cannot tell a restart from a long idle period. The script reads
// run_id itself rather than being passed one the client read earlier, so no restart can fall between
// the read and its use. A server or proxy that does not answer INFO server (miniredis, a renamed INFO)
// leaves only the missing-key check: a restart that loads an older snapshot is then not detected. The
// guard also delays the first election of a role, and the first after KeyTTL of disuse, by one TTL.
// A promoted replica is a new run too, so failover re-arms the guard; but a replica that lost acknowledged
// writes can still bring back an old holding, which is why the topology assumed is a single server.
//
// # Redis Cluster
//
// A role's keys are <prefix>{<role>}:leader, :term, :epoch, :hb and the :released channel: the role is
// their hash tag, so every script touches one slot and the election runs on Redis Cluster unchanged
// (a role name must not begin with '}'). The guard and the term are then per role on the shard that
// serves it. When that shard's primary dies and its replica is promoted, the replica's epoch key names
// the old primary's run_id, so its first acquire re-arms the guard for one TTL: a holding the replica
// never received cannot be granted again while its holder may still lead, and the first term after the
// guard is the promoted server's time, at least one TTL past every term the old primary granted (given
// shard clocks within one TTL of each other). A holding the replica does have keeps being renewed by
// its leader. What stays outside the assumptions is a primary cut off from its replicas but not from
// clients: it goes on granting and renewing for one leader while the promoted replica, once its guard
// is over, grants to another. Give the go-redis ClusterClient a short ClusterStateReloadInterval: a dead
// primary sends no MOVED, and go-redis otherwise learns the new one only at its periodic reload.
//
// # Lost replies (Redis)
//
// A request whose reply is lost (a one-way partition, a connection cut after the request went out) may
// have taken effect, and go-redis re-sends it on a fresh connection. A leader that kept renewing or
// acquiring blind would keep a holding alive on Redis, or take a new one, that nobody acts on, and the
// standbys would wait a full TTL more each time. So the Redis backend keeps the health of its link: after
// a call that got no reply it sends no acquire or renewal until a PING probe is answered (see
// RedisBackend.LinkHealthy; the elector's tenure_election_link_healthy gauge). Its release is still sent,
// and always with the script's source (EVAL), so that one whose reply is lost still lands and lets a
// standby in at once.
//
// # Keys (Redis)
//
// Every key expires. The holding expires after its TTL; the term and epoch keys KeyTTL (default 24h)
// after the role's last acquire or renewal, so roles that come and go leave nothing behind. Terms stay
// monotonic without the term key, being the server's time in µs (raised above the term key while it
// exists, for grants within one µs or a clock standing still); an expired epoch key only re-arms the
// guard.
//
// # The lease package's protocol
//
// The lease package (per-endpoint leases) runs the same Redis holding protocol in its safety mechanisms:
// renew and release are conditional Lua scripts that compare the holding, acquires are idempotent per
// attempt, the fresh-dataset guard is an epoch bound to the server's run_id, bookkeeping keys expire,
// and the local deadline is counted from the request's send time. The one difference is deliberate and
// lies in what names a holding. A lease's fencing token comes from a per-endpoint counter kept apart
// from the lease key, so the key's value carries a holding identity of its own (the instance and a
// per-attempt nonce). An election has one key per role and its term (the server's time in µs, granted
// once) is written into that key: the term is at once the fencing token and the holding's identity, and
// renew and release compare it directly, with the nonce needed only to tell a re-sent acquire from a
// new one.
//
// # PostgreSQL: what breaks the backend
//
//   - Connection poolers in transaction or statement mode (PgBouncer pool_mode=transaction): a session
//     advisory lock belongs to the server session, and the pooler hands that session to other clients
//     between transactions. The lock then outlives its holder or is released by someone else, and the
//     renewal's pg_locks check looks at whichever session it lands on. Connect directly, or through a
//     pooler in session mode.
//   - synchronous_commit=off (for the database, the role or the session): a commit is acknowledged
//     before it is durable, so a server crash can lose a granted row or a renewed lease_until. After
//     the restart a candidate finds no live row and is granted the role while the old leader acts on
//     an acknowledged renewal. Sequence values can repeat too. Keep synchronous_commit on (the default).
//   - A failover to a replica without the latest commits, for the same reason.
//
// # Taking over when the holding ends
//
// A crashed leader's last renewal came before the crash, so its holding ends on the backend at most one
// TTL after it. A candidate whose acquire is refused asks the backend (Backend.Leader, one round trip)
// how long the holding has left (Redis: the leader key's PTTL; PostgreSQL: lease_until - now()), or how
// long the fresh-dataset guard has left, and sends its next acquire 2 ms after that end, never later
// than RetryInterval, measured on Clock from before the question was sent (so it errs early; an early
// attempt is refused and reads what is left). Failover after a crash is therefore TTL plus a round trip
// and a timer's delay, not TTL + RetryInterval; a live leader costs its standbys at most one extra
// acquire per renewal. The schedule only decides when the ordinary acquire is sent: it grants nothing,
// and every check above still applies to that acquire. Release hints still make a graceful handoff
// immediate.
//
// # What is not guaranteed
//
// Liveness: a leader is elected only while the backend is reachable. Failover after a crash takes about
// TTL on Redis; an acquire or question that fails (a timeout, an unhealthy link) falls back to
// RetryInterval. On PostgreSQL it takes until lease_until when the crashed process's session closed with
// it, and otherwise is bounded by the server's dead-session detection (see PostgresBackend). Work that
// ignores its context past HandoffTimeout may overlap its successor. Events may be dropped when nobody
// reads them.
package election
