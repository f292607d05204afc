//go:build tenure_mutants

package election

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/mutation"
)

// The mutants' branches do what their names say, and the reference does not: each leaves the mechanism
// out only when switched on.

func TestMutantTermUncheckedRenewsAnotherHolding(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		t.Run(map[bool]string{false: "reference", true: "mutant"}[mutant], func(t *testing.T) {
			b := newMemBackend()
			cfg := testConfig(t, "r", "a", 1)
			cfg.StartJitter = 0
			if mutant {
				cfg = WithMutants(cfg, mutation.ElectionTermUnchecked)
			}
			lost := make(chan error, 1)
			cfg.OnStartedLeading = func(ctx context.Context, _ uint64) { <-ctx.Done(); lost <- context.Cause(ctx) }
			e, err := New(&leaderReporting{b}, cfg)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			require.NoError(t, e.Start(ctx))
			require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
			// Another holding of the same instance replaces this one on the backend.
			b.mu.Lock()
			b.term++
			b.holders["r"] = memHolding{id: "a", term: b.term}
			b.mu.Unlock()
			select {
			case err := <-lost:
				require.False(t, mutant, "the mutant renews the other holding and leads on")
				require.ErrorIs(t, err, ErrNotHeld)
			case <-time.After(4 * testRenew):
				require.True(t, mutant, "the reference must lose a leadership whose term is gone")
			}
			require.NoError(t, e.Stop(context.Background()))
		})
	}
}

func TestMutantNoCancelOutlivesTheDeadline(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		t.Run(map[bool]string{false: "reference", true: "mutant"}[mutant], func(t *testing.T) {
			b := &hangingBackend{release: make(chan struct{})}
			t.Cleanup(func() { close(b.release) })
			cfg := testConfig(t, "r", "a", 1)
			cfg.TTL, cfg.RenewInterval, cfg.OpTimeout, cfg.SafetyMargin = time.Second, 300*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
			cfg.StartJitter = 0
			if mutant {
				cfg = WithMutants(cfg, mutation.ElectionNoCancel)
			}
			ended := make(chan struct{})
			cfg.OnStartedLeading = func(ctx context.Context, _ uint64) { <-ctx.Done(); close(ended) }
			e, err := New(b, cfg)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			require.NoError(t, e.Start(ctx))
			select {
			case <-ended:
				require.False(t, mutant, "the mutant's leader context outlives the deadline")
			case <-time.After(cfg.validity() + 2*time.Second):
				require.True(t, mutant, "the reference cancels the leader context at the deadline")
			}
		})
	}
}

func TestMutantNamesAreChecked(t *testing.T) {
	require.PanicsWithValue(t, `election: "no-deadline" is not a mutant of the election (see mutation.Mutants)`,
		func() { WithMutants(DefaultConfig(), mutation.NoDeadline) })
}

// The mutant's Stop after Start's context ended releases nothing: the holding waits for its TTL.
func TestMutantStopAfterCancelAbandons(t *testing.T) {
	b, e := leaderThenCancelled(t, WithMutants(testConfig(t, "r", "a", 1), mutation.ElectionStopAfterCancelAbandons))
	require.NoError(t, e.Stop(context.Background()))
	require.True(t, b.held(), "the mutant's Stop releases nothing")
}
