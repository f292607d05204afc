package sim_test

import (
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/mutation"
)

// Mutants of the mechanisms that keep a fleet's grants apart and its load even: the fresh-dataset
// guard, fencing tokens that rise across a lost dataset, link health (no blind writes), the wait for
// an in-flight poll before a handoff's release, and the load caps of the assignment.
func init() {
	mutantCases = append(mutantCases,
		// A holder stops, Redis restarts empty and a new instance joins: the assignment moves endpoints
		// whose old holders still believe in them, and only the guard keeps the new owners from being
		// granted them at once.
		mutantCase{mutant: mutation.NoGuard, scenarios: []string{"redis-restart-empty-churn"},
			caughtBy: []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvStalePoll}},
		// The restart erases the counters: every grant after it must still carry a token above those
		// granted before.
		mutantCase{mutant: mutation.TokenReset, scenarios: []string{"redis-restart-empty"},
			caughtBy: []string{checker.InvFencing}},
		// Requests keep landing while replies are lost for longer than the failover bound: a holder
		// that goes on writing blind keeps its leases alive in Redis although it polls nothing.
		mutantCase{mutant: mutation.NoLinkHealth, scenarios: []string{"one-way-partition"},
			caughtBy: []string{checker.InvFailover, checker.InvLiveness}},
		// Endpoints change hands at ten joins (and sixteen of twenty as eight instances join at once),
		// many with a poll in flight.
		mutantCase{mutant: mutation.ReleaseBeforePoll, scenarios: []string{"join-2-to-3-x10", "scale-to-10"},
			caughtBy: []string{checker.InvSinglePoller, checker.InvSingleHolder}},
		mutantCase{mutant: mutation.PlainRendezvous, scenarios: []string{"balance-4x40-join"},
			caughtBy: []string{checker.InvBalance}},
	)
}
