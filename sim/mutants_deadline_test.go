package sim_test

import (
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/mutation"
)

// Mutants of the local validity deadline and of how renewal outcomes move it.
func init() {
	mutantCases = append(mutantCases,
		mutantCase{mutant: mutation.NoDeadline, scenarios: []string{"stall-past-ttl"},
			caughtBy: []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvValidity}},
	)
}
