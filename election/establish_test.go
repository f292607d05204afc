package election

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On a new role the guard holds everyone off for one TTL, and the elector says until when and why,
// once; MarkEstablished lets the first election happen at once.
func TestFreshRoleGuardIsExplainedAndCanBeSkipped(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	b := NewRedisBackend(env.c, RedisOptions{})
	ctx := context.Background()

	run := func(role string, logs *syncBuffer) (*Elector, time.Duration) {
		cfg := testConfig(t, role, "a", 1)
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		e, err := New(b, cfg)
		require.NoError(t, err)
		begin := time.Now()
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		require.Eventually(t, e.IsLeader, 2*testTTL+time.Second, time.Millisecond)
		return e, time.Since(begin)
	}

	var guarded syncBuffer
	_, took := run(uniqueRole(t), &guarded)
	require.GreaterOrEqual(t, took, testTTL-testOp, "a new role waits for the guard")
	require.Equal(t, 1, strings.Count(guarded.String(), "nobody leads until"), "said once:\n%s", guarded.String())
	require.Contains(t, guarded.String(), "fresh dataset")

	role := uniqueRole(t)
	require.NoError(t, b.MarkEstablished(ctx, role))
	var established syncBuffer
	_, took = run(role, &established)
	require.Less(t, took, testTTL/2, "an established role is granted at once")
	require.NotContains(t, established.String(), "nobody leads until")

	// A guard in force stays in force.
	role = uniqueRole(t)
	_, ok, err := b.TryAcquire(ctx, role, "x", testTTL)
	require.NoError(t, err)
	require.False(t, ok, "the first attempt arms the guard")
	require.NoError(t, b.MarkEstablished(ctx, role))
	_, ok, err = b.TryAcquire(ctx, role, "x", testTTL)
	require.NoError(t, err)
	require.False(t, ok, "MarkEstablished never lifts a guard already in force")
}
