package sim_test

import (
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/mutation"
)

// Mutants of the manager's lifecycle: Start and Stop as they were before their transitions were guarded.
func init() {
	mutantCases = append(mutantCases,
		// Stopped the way services stop on SIGTERM (the start context cancelled, then Stop), the mutant
		// releases nothing: its endpoints move a lease TTL later, not within the handoff bound.
		mutantCase{mutant: mutation.StopAfterCancelAbandons, scenarios: []string{"signal-stop"},
			caughtBy: []string{checker.InvFailover}},
		// The mutant's heartbeat loop runs on while Stop releases (held on the wire longer than a
		// heartbeat interval): the heartbeat comes back, the fleet leaves the stopped instance its
		// endpoints, and they wait for the heartbeat to expire.
		mutantCase{mutant: mutation.StopHeartbeatRewrite, scenarios: []string{"stop-heartbeat-race"},
			caughtBy: []string{checker.InvFailover, checker.InvLiveness}},
		// Stopped while its start retries, the mutant takes the running path and panics on what Start has
		// not set up yet. The harness turns the panic into the fault's error: the run did not go as
		// scheduled, and the verdict is unknown.
		mutantCase{mutant: mutation.StopDuringStartUnguarded, scenarios: []string{"stop-during-start"},
			caughtBy: []string{checker.InvAssumptions}, mention: "Stop panicked"},
		// The elector stopped the same way releases nothing either: a standby leads a TTL later.
		mutantCase{mutant: mutation.ElectionStopAfterCancelAbandons, reference: "election-redis",
			scenarios: []string{"election-signal-stop-redis"}, caughtBy: []string{checker.InvFailover}},
	)
}
