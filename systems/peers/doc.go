// Package peers wires the lock libraries Go teams pick off the shelf into the harness, the way their
// READMEs show, so that `simrun matrix` can compare them with Tenure's reference. Each instance runs with
// a seeded ±20 % jitter on its refresh interval, as real deployments do. Only the wiring is ours; what
// the library does is the library's.
//
// The wiring is the same for every library (member.go): each instance finds its targets by SCAN, tries
// to lock every target it does not hold (no balancing), polls and refreshes each lock it holds, and a
// failed refresh ends the holding without a release, as the READMEs' patterns stop on any error. Only
// how a lock is taken, refreshed and released differs (lockLibrary):
//
//   - redislock (github.com/bsm/redislock): a lock per endpoint, taken with Obtain(key, TTL) (no retry),
//     kept with Refresh(key, TTL) every RenewInterval, given back with Release. There is no local deadline and
//     no fencing token: the library offers neither, and the README does not add one.
//   - redsync (github.com/go-redsync/redsync/v4) on one Redis: a mutex per endpoint, taken with one
//     TryLockContext, extended with ExtendContext, given back with UnlockContext; see RedSync.
package peers
