//go:build !tenure_mutants

package reference

import "github.com/tenurelabs/tenure/sim"

// MutantsAbsent is what simrun says when asked for a mutant it was built without.
const MutantsAbsent = "the reference's checker-power mutants exist only in a simrun built with the " +
	"tenure_mutants tag: go build -tags tenure_mutants -o bin/simrun ./cmd/simrun (see docs/mutants.md)"

func init() { sim.RegisterAbsent("mutant-", MutantsAbsent) }
