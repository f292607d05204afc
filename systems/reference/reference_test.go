package reference_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// Every script the reference sends is classified, by EVALSHA and by EVAL.
func TestReferenceClassifiesItsScripts(t *testing.T) {
	r := reference.NewReference()
	for sha, name := range lease.ScriptNames() {
		op, ok := r.Classify([]any{"evalsha", sha, 1, "poll:lease:x", "a:1", 3000}, int64(1), nil)
		require.True(t, ok, name)
		require.Equal(t, "poll:lease:x", op.Key, name)
	}
	for name, src := range lease.Scripts() {
		op, ok := r.Classify([]any{"eval", src, 1, "poll:lease:x", "a:1", 3000}, int64(1), nil)
		require.True(t, ok, name)
		require.Equal(t, "poll:lease:x", op.Key)
	}
}

// The reference reports its local deadline (Until, on its own clock) with every acquisition and with
// every renewal that moves it.
func TestReferenceBeliefsCarryDeadlines(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	ctx := context.Background()
	require.NoError(t, lease.MarkEstablished(ctx, client, "poll:"))
	require.NoError(t, client.Set(ctx, "session:x", `{"id":"x"}`, 0).Err())
	var mu sync.Mutex
	var beliefs []history.Belief
	var at []time.Time
	in, err := reference.NewReference().NewInstance(sim.InstanceConfig{
		ID: "i0", Seed: 1, Client: client, Clock: clock.Real{}, KeyPrefix: "poll:", SessionPrefix: "session:",
		Timing: sim.Timing{LeaseTTL: 3 * time.Second, RenewInterval: time.Second, HeartbeatInterval: time.Second,
			HeartbeatTTL: 3 * time.Second, DiscoveryInterval: time.Second, PollInterval: 100 * time.Millisecond,
			OpTimeout: 500 * time.Millisecond, DriftBound: 0.01},
		Poll: func(context.Context, string, uint64) error { return nil },
		Observe: func(_ string, b history.Belief) {
			mu.Lock()
			defer mu.Unlock()
			beliefs = append(beliefs, b)
			at = append(at, time.Now())
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	require.NoError(t, in.Start(ctx))
	defer func() { _ = in.Stop(ctx) }()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(beliefs) >= 3
	}, 20*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, history.ReasonAcquired, beliefs[0].Reason)
	for i, b := range beliefs[:3] {
		require.True(t, b.Held, "%+v", b)
		require.True(t, b.Until.After(at[i]), "deadline after the report: %+v", b)
		require.LessOrEqual(t, b.Until.Sub(at[i]), 3*time.Second, "within one TTL: %+v", b)
		if i > 0 {
			require.Equal(t, history.ReasonRenewed, b.Reason)
			require.Equal(t, beliefs[0].Token, b.Token)
			require.True(t, b.Until.After(beliefs[i-1].Until), "a renewal moves the deadline forward")
		}
	}
}
