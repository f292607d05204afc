// Package baselines holds small models of lease and leader-election designs that teams run today, for
// comparison with Tenure's reference in the same scenarios (see `simrun matrix`). Each is a model of a
// design for comparison, not for production: it does what the design's own description says and no more,
// so that a scenario it fails shows what a team running that design would meet.
//
// The systems register themselves with sim.Register when the package is imported, exactly as a user's
// system would:
//
//   - naive (lease): the classic design at its barest: SET NX PX to acquire, an unconditional PEXPIRE
//     to renew and DEL to release, errors ignored; no local deadline, no fencing token, no balancing.
//   - spec-naive (lease): per-endpoint leases as the polling-lease specification writes them: SET NX PX
//     to acquire, Lua compare-the-value scripts to renew and release, renewal every RenewInterval,
//     polling paused after a renewal error; no local deadline, no idempotent acquire, no fencing token,
//     plain rendezvous hashing (FNV-1a highest random weight, no load bound).
//   - getexpire (election, Redis): a leader lock taken with SET NX EX; the leader renews every
//     RenewInterval with GET and then EXPIRE, two separate commands; a standby retries every
//     RenewInterval; a Lua compare-and-delete releases on shutdown.
//   - heartbeat-takeover (election, Redis): a leader key plus a heartbeat key per instance holding a
//     timestamp; a follower that judges the leader's heartbeat stale by its age forces an election
//     (DEL, then SET NX) and verifies with a GET; a random start-up delay; election timeout 15 s and
//     heartbeat 10 s in spec time.
//   - pg-advisory (election, PostgreSQL): pg_try_advisory_lock plus a row with lease_until; a standby
//     tries the lock every 5 s (spec time); the leader renews its row but never re-checks that its
//     session still holds the lock.
//
// Every design with a refresh interval but naive gets a seeded ±20 % jitter per instance, as real
// deployments have: instances in lock step hide races (naive, the oldest baseline, keeps its fixed
// interval, so that its recorded results stay comparable). All time comes from InstanceConfig.Clock,
// all Redis access goes through InstanceConfig.Client and every action on the resource through
// InstanceConfig.Poll.
// None of these designs has a fencing token: they poll with token 0.
package baselines
