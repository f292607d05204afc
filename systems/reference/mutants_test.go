//go:build tenure_mutants

package reference_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// Every mutant of the catalogue is registered, hidden, and built from its reference.
func TestMutantsAreHiddenButRunnable(t *testing.T) {
	listed := sim.Systems()
	require.Contains(t, listed, "reference")
	for _, mu := range mutation.Mutants {
		name := mu.System()
		require.NotContains(t, listed, name)
		s, err := sim.Lookup(name)
		require.NoError(t, err)
		require.Equal(t, name, s.Name())
		switch mu.Of {
		case mutation.Lease:
			require.IsType(t, reference.Reference{}, s, name)
		case mutation.Election:
			require.Equal(t, "election", s.(interface{ Kind() string }).Kind(), name)
			require.False(t, s.(interface{ UsesPostgres() bool }).UsesPostgres(), "%s: on Redis", name)
		default:
			t.Errorf("mutant %s of unknown system %q", name, mu.Of)
		}
	}
	s, err := sim.Lookup("mutant-no-deadline")
	require.NoError(t, err)
	require.Equal(t, "mutant-no-deadline", s.Name())
}

// Every acquire a mutant sends is classified as the reference's, by EVALSHA.
func TestMutantScriptsAreClassified(t *testing.T) {
	r := reference.NewMutant(mutation.NoGuard).(sim.OpClassifier)
	acquires := 0
	for sha, name := range lease.ScriptNames() {
		if name != "acquire" {
			continue
		}
		acquires++
		op, ok := r.Classify([]any{"evalsha", sha, 3, "poll:lease:x", "poll:fence:x", "poll:epoch", "a:1", 3000, 86400000}, int64(7), nil)
		require.True(t, ok, sha)
		require.Equal(t, history.OpAcquire, op.Kind)
		require.Equal(t, "a:1", op.Owner)
		require.True(t, op.OK)
	}
	require.Equal(t, 6, acquires, "the reference's acquire and its five variants")
}
