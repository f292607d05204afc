//go:build !tenure_mutants

package reference_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// Without the tag there are no mutants, and asking for one says how to build a simrun that has them.
func TestAbsentMutantSaysHowToBuildOne(t *testing.T) {
	_, err := sim.Lookup("mutant-no-deadline")
	require.ErrorContains(t, err, reference.MutantsAbsent)
	require.ErrorContains(t, err, "go build -tags tenure_mutants")
	_, err = sim.Lookup("no-such-system")
	require.ErrorContains(t, err, "known: ")
}
