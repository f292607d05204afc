// Package election is leader election for a fleet: for each role, at most one instance acts as leader at
// a time, and a standby takes over when the leader stops, crashes or loses its backend.
//
// # Patterns
//
//   - Continuous: New + Start; IsLeader, Leader, State, Term, Events; callbacks OnStartedLeading (with a
//     leader context), OnStoppedLeading, OnNewLeader; Stop hands off gracefully.
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
// a term lower than one it has seen stays safe even when the assumptions above fail. The package cannot fence on its own: pass the term to the resource.
//
// A Redis that restarts empty forgets the holding while the old leader may still be inside its deadline.
// The Redis backend notices a lost dataset (its epoch key is gone) and grants the role to nobody for one
// TTL, which also delays the very first election of a role by one TTL.
//
// # What is not guaranteed
//
// Liveness: a leader is elected only while the backend is reachable. Failover after a crash takes up to
// TTL + RetryInterval (Redis) and is bounded by the server's dead-session detection on PostgreSQL (see
// PostgresBackend). Work that ignores its context past HandoffTimeout may overlap its successor. Events
// may be dropped when nobody reads them.
package election
