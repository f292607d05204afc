//go:build tenure_mutants

package election

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// attempts counts the acquire scripts a client sends.
type attempts struct{ n atomic.Int64 }

func (a *attempts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (a *attempts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if args := c.Args(); len(args) > 1 && fmt.Sprint(args[1]) == acquireScript.Hash() {
			a.n.Add(1)
		}
		return next(ctx, c)
	}
}
func (a *attempts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The mutant leaves a term of its own that it does not lead (an acquire that landed after its caller
// gave up) to expire: attempt after attempt is refused, and nobody leads meanwhile. The reference
// releases it at its first refusal (TestRedisAbandonedTermReleasedAtOnce).
func TestMutantAbandonedTermKept(t *testing.T) {
	env := newRedisEnv(t)
	role := uniqueRole(t)
	const ttl = 30 * time.Second
	counted := &attempts{}
	env.c.AddHook(counted)
	b := NewRedisBackend(env.c, RedisOptions{})
	require.NoError(t, b.MarkEstablished(t.Context(), role))
	abandoned, ok, err := b.TryAcquire(t.Context(), role, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)
	cfg := testConfig(t, role, "a", 1)
	cfg.TTL, cfg.RenewInterval = ttl, 2*time.Second
	e, err := New(b, WithMutants(cfg, mutation.ElectionAbandonedTermKept))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	before := counted.n.Load()
	require.Eventually(t, func() bool { return counted.n.Load() >= before+3 }, ttl/2, 10*time.Millisecond, "attempts go on")
	require.False(t, e.IsLeader())
	info, err := b.Leader(t.Context(), role)
	require.NoError(t, err)
	require.Equal(t, abandoned, info.Term, "the abandoned term is still the role's")
}
