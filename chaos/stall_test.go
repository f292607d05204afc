package chaos_test

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

// stallEnv is a fakeEnv that can stall an instance's calls.
type stallEnv struct{ fakeEnv }

func (e *stallEnv) Stall(id string) error   { e.log("stall " + id); return nil }
func (e *stallEnv) Unstall(id string) error { e.log("unstall " + id); return nil }

func TestStallAppliesAndEnds(t *testing.T) {
	env := &stallEnv{fakeEnv{live: []string{"x", "y"}}}
	end, a, err := chaos.Stall{Slot: 1}.Apply(context.Background(), env)
	require.NoError(t, err)
	require.Equal(t, []string{"y"}, a.Targets)
	require.NoError(t, end(context.Background()))
	require.Equal(t, []string{"stall y", "unstall y"}, env.calls)
}

func TestStallNeedsAnEnvThatCanStall(t *testing.T) {
	_, _, err := chaos.Stall{Slot: 0}.Apply(context.Background(), &fakeEnv{live: []string{"x"}})
	require.ErrorIs(t, err, chaos.ErrUnsupported)
}

func TestStallSlotIsValidated(t *testing.T) {
	err := chaos.Validate(chaos.Schedule{{At: time.Second, For: time.Second, Fault: chaos.Stall{Slot: 3}}}, 2, nil)
	require.ErrorContains(t, err, "slot 3")
}

func TestJitteredMovesStepsWithinTheirBounds(t *testing.T) {
	s := chaos.Schedule{
		{At: 10 * time.Second, For: 5 * time.Second, Fault: chaos.Pause{Slot: 0}},
		{At: 10 * time.Second, Fault: chaos.Crash{Slot: 1}},
		{At: 30 * time.Second, Jitter: -1, Fault: chaos.Crash{Slot: 0}},
		{At: 40 * time.Second, Jitter: 500 * time.Millisecond, Fault: chaos.Start{Count: 1}},
		{At: 58 * time.Second, For: time.Second, Fault: chaos.Pause{Slot: 0}},
	}
	distinct := map[time.Duration]bool{}
	for seed := int64(0); seed < 30; seed++ {
		got, shifts := s.Jittered(rand.New(rand.NewSource(seed)), 3*time.Second, time.Minute)
		again, _ := s.Jittered(rand.New(rand.NewSource(seed)), 3*time.Second, time.Minute)
		require.Equal(t, got.String(), again.String(), "one seed, one schedule")
		for i, st := range got {
			require.Equal(t, s[i].At+shifts[i], st.At)
			require.GreaterOrEqual(t, shifts[i], time.Duration(0))
			require.Zero(t, shifts[i]%time.Millisecond, "whole milliseconds, as printed")
		}
		require.LessOrEqual(t, shifts[0], 3*time.Second)
		require.Equal(t, shifts[0], shifts[1], "steps written for one moment move together")
		require.Zero(t, shifts[2], "a pinned step stays")
		require.LessOrEqual(t, shifts[3], 500*time.Millisecond, "a step's own bound wins")
		require.LessOrEqual(t, got[4].At+got[4].For, time.Minute, "never past the run")
		distinct[shifts[0]] = true
	}
	require.Greater(t, len(distinct), 5, "seeds move the faults")
}
