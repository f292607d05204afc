package election

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// miniBackend returns a backend on an in-process miniredis whose clock the test sets by hand.
func miniBackend(t *testing.T, opts RedisOptions) (*miniredis.Miniredis, *RedisBackend, time.Time) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m.SetTime(now)
	return m, NewRedisBackend(c, opts), now
}

func TestRedisFreshDatasetGrantsNothingForOneTTL(t *testing.T) {
	m, b, now := miniBackend(t, RedisOptions{})
	ctx := context.Background()
	_, ok, err := b.TryAcquire(ctx, "r", "a", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "a fresh dataset must not grant the role at once")
	m.SetTime(now.Add(999 * time.Millisecond))
	_, ok, err = b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "still inside the grace")
	m.SetTime(now.Add(time.Second))
	term, ok, err := b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(now.Add(time.Second).UnixMicro()), term, "terms are Redis TIME in µs")
}

// grant passes the fresh-dataset grace of role and acquires it for id.
func grant(t *testing.T, m *miniredis.Miniredis, b *RedisBackend, role, id string, at time.Time) uint64 {
	t.Helper()
	ctx := context.Background()
	_, _, err := b.TryAcquire(ctx, role, id, time.Second)
	require.NoError(t, err)
	m.SetTime(at.Add(time.Second))
	term, ok, err := b.TryAcquire(ctx, role, id, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	return term
}

func TestRedisAcquireIsIdempotentAndExclusive(t *testing.T) {
	m, b, now := miniBackend(t, RedisOptions{KeyPrefix: "x:"})
	ctx := context.Background()
	term := grant(t, m, b, "r", "a", now)

	again, ok, err := b.TryAcquire(ctx, "r", "a", time.Second)
	require.NoError(t, err)
	require.True(t, ok, "a retried acquire by the holder succeeds")
	require.Equal(t, term, again, "with the same term")

	_, ok, err = b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "no takeover of a key that exists")
	v, err := m.Get("x:{r}:leader")
	require.NoError(t, err)
	require.Equal(t, "a", v)

	info, err := b.Leader(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "a", info.ID)
	require.Equal(t, term, info.Term)
	require.Positive(t, info.TTL)
}

func TestRedisRenewAndReleaseCompareHolderAndTerm(t *testing.T) {
	m, b, now := miniBackend(t, RedisOptions{Heartbeat: true})
	ctx := context.Background()
	term := grant(t, m, b, "r", "a", now)

	require.ErrorIs(t, b.Renew(ctx, "r", "b", term, time.Second), ErrNotHeld)
	require.ErrorIs(t, b.Renew(ctx, "r", "a", term+1, time.Second), ErrNotHeld)
	require.NoError(t, b.Renew(ctx, "r", "a", term, 5*time.Second))
	require.Equal(t, 5*time.Second, m.TTL("election:{r}:leader"))
	info, err := b.Leader(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Second).UnixMicro(), info.Heartbeat.UnixMicro(), "heartbeat carries Redis time")

	require.ErrorIs(t, b.Release(ctx, "r", "b", term), ErrNotHeld)
	require.ErrorIs(t, b.Release(ctx, "r", "a", term-1), ErrNotHeld)
	require.NoError(t, b.Release(ctx, "r", "a", term))
	require.NoError(t, b.Release(ctx, "r", "a", term), "a retried release succeeds and harms nothing")
	require.False(t, m.Exists("election:{r}:hb"))
	info, err = b.Leader(ctx, "r")
	require.NoError(t, err)
	require.Empty(t, info.ID)

	// Once someone else was granted the role, the old term releases nothing.
	next, ok, err := b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, b.Release(ctx, "r", "a", term), ErrNotHeld)
	require.NoError(t, b.Renew(ctx, "r", "b", next, time.Second))
}

func TestRedisTermsIncreaseAcrossDataLossAndClockSteps(t *testing.T) {
	m, b, now := miniBackend(t, RedisOptions{})
	ctx := context.Background()
	t1 := grant(t, m, b, "r", "a", now)
	require.NoError(t, b.Release(ctx, "r", "a", t1))

	// The server clock stands still (or steps back): the term still goes up.
	m.SetTime(now.Add(time.Second))
	t2, ok, err := b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t1+1, t2)

	// The dataset is lost (restart without persistence): grace again, then terms from Redis time,
	// above every term before the loss since time moved on.
	m.FlushAll()
	later := now.Add(time.Minute)
	m.SetTime(later)
	t3 := grant(t, m, b, "r", "c", later)
	require.Greater(t, t3, t2)
}
