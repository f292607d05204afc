package sim_test

import (
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/mutation"
)

// Mutants of the checks that tie a write to the holding it was sent for: renewals and releases that
// compare the holding's value atomically, a value that names the holding rather than the process, and
// an acquire that a re-send cannot turn against itself.
//
// The renewal mutants send a plain PEXPIRE (after a GET, or alone), which extends whoever holds the key.
// Its harm is to the next holder: a PEXPIRE held on the wire lands after the endpoint moved and keeps
// the new holder's key alive for a full TTL from its landing. In renewal-gap-pause-crash the new holder
// has crashed by then, so the takeover comes past the failover bound. (Validity credits an unconditional
// renewal to its sender only while the sender's own lease held, so the mutants' own polls are not
// violations: the key still named them when the renewal applied.)
func init() {
	mutantCases = append(mutantCases,
		mutantCase{mutant: mutation.RenewUnconditional, scenarios: []string{"renewal-gap-pause-crash"},
			caughtBy: []string{checker.InvFailover}},
		mutantCase{mutant: mutation.RenewGetThenExpire, scenarios: []string{"renewal-gap-pause-crash"},
			caughtBy: []string{checker.InvFailover}},
		// A handoff release held on the wire lands after its sender re-acquired the endpoint: a plain DEL,
		// or a release whose value names only the process, deletes the new holding under a holder that
		// still believes, and the instance that prefers the endpoint takes it at once.
		mutantCase{mutant: mutation.ReleaseUnchecked, scenarios: []string{"release-after-reacquire"},
			caughtBy: []string{checker.InvSingleHolder, checker.InvSinglePoller}},
		mutantCase{mutant: mutation.ProcessIdentity, scenarios: []string{"release-after-reacquire"},
			caughtBy: []string{checker.InvSingleHolder, checker.InvSinglePoller}},
		// An acquire whose reply is lost to a connection reset after it took effect is sent again by
		// go-redis within the same call; the mutant's re-send reports the lease as another's, which no
		// single acquire on that key could have answered.
		mutantCase{mutant: mutation.AcquireNotIdempotent, scenarios: []string{"acquire-resent"},
			caughtBy: []string{checker.InvLinearizable}},
	)
}
