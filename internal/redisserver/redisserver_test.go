package redisserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

func TestLifecycle(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, "v", c.Get(ctx, "k").Val())

	// Paused: the server holds the connection but answers nothing until resumed.
	require.NoError(t, s.Pause())
	require.Error(t, c.Ping(ctx).Err(), "a paused server must not answer")
	require.NoError(t, s.Resume())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)

	// Restart: same port, empty dataset.
	port := s.Port()
	require.NoError(t, s.Restart())
	require.Equal(t, port, s.Port())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, int64(0), c.Exists(ctx, "k").Val(), "a restarted server must come back empty")

	// Kill: nothing answers; Start brings it back.
	require.NoError(t, s.Kill())
	require.False(t, s.Running())
	require.Error(t, c.Ping(ctx).Err())
	require.NoError(t, s.Start())
	require.True(t, s.Running())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)

	require.NoError(t, s.Close())
	require.False(t, s.Running())
	require.NoError(t, s.Close(), "Close is idempotent")
}

func TestTwoServersGetDistinctPorts(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	require.NotEqual(t, a.Port(), b.Port())
}
