package sim_test

import (
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/mutation"
)

// Mutants of the checks that tie a write to the holding it was sent for: renewals and releases that
// compare the holding's value atomically, a value that names the holding rather than the process, and
// an acquire that a re-send cannot turn against itself.
//
// The renewal mutants send a plain PEXPIRE (after a GET, or alone), which extends whoever holds the key:
// its success says nothing about whose lease it is. The validity invariant credits a poller only with
// renewals that name its own holding, so every poll the mutant makes on the strength of such a renewal
// lies outside a confirmed lease of its own: the very guarantee the removed check gave. In slow-renewal
// those renewals also land, late, on leases that others hold.
func init() {
	mutantCases = append(mutantCases,
		mutantCase{mutant: mutation.RenewUnconditional, scenarios: []string{"slow-renewal"},
			caughtBy: []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvValidity}},
		mutantCase{mutant: mutation.RenewGetThenExpire, scenarios: []string{"slow-renewal"},
			caughtBy: []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvValidity}},
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
