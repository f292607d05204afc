package election

import (
	"context"
	"fmt"
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
	t.Parallel()
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
	t.Parallel()
	m, b, now := miniBackend(t, RedisOptions{KeyPrefix: "x:"})
	ctx := context.Background()
	_, _, err := b.tryAcquire(ctx, "r", "a", time.Second, "aa")
	require.NoError(t, err)
	m.SetTime(now.Add(time.Second))
	term, ok, err := b.tryAcquire(ctx, "r", "a", time.Second, "01")
	require.NoError(t, err)
	require.True(t, ok)

	again, ok, err := b.tryAcquire(ctx, "r", "a", time.Second, "01")
	require.NoError(t, err)
	require.True(t, ok, "a re-sent acquire (same attempt nonce) gets its holding back")
	require.Equal(t, term, again, "with the same term")

	_, ok, err = b.TryAcquire(ctx, "r", "a", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "a new attempt by the same instance is not given the earlier holding")

	_, ok, err = b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "no takeover of a key that exists")
	v, err := m.Get("x:{r}:leader")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d:01:a", term), v)

	info, err := b.Leader(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "a", info.ID)
	require.Equal(t, term, info.Term)
	require.Positive(t, info.TTL)
}

func TestRedisRenewAndReleaseCompareHolderAndTerm(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

	// The term key expired (KeyTTL of disuse) and the server clock moved on: terms still go up.
	require.NoError(t, b.Release(ctx, "r", "b", t2))
	m.Del("election:{r}:term")
	m.SetTime(now.Add(2 * time.Second))
	t2b, ok, err := b.TryAcquire(ctx, "r", "b", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, t2b, t2)
	t2 = t2b

	// The dataset is lost (restart without persistence): grace again, then terms from Redis time,
	// above every term before the loss since time moved on.
	m.FlushAll()
	later := now.Add(time.Minute)
	m.SetTime(later)
	t3 := grant(t, m, b, "r", "c", later)
	require.Greater(t, t3, t2)
}

// A late or re-sent release of an earlier holding must not delete a later holding by the same instance:
// RunOnce with a fixed instance ID, run twice, with the first run's release delayed on the wire.
func TestRedisLateReleaseOfEarlierHoldingKeepsLaterOne(t *testing.T) {
	t.Parallel()
	m, b, now := miniBackend(t, RedisOptions{})
	ctx := context.Background()
	t1 := grant(t, m, b, "r", "a", now)

	// The first holding's release is in flight; the second run's acquire lands first.
	_, ok, err := b.TryAcquire(ctx, "r", "a", time.Second)
	require.NoError(t, err)
	require.False(t, ok, "a new attempt must not take over the earlier holding of its instance")

	// The late release lands, then the second run acquires a holding of its own.
	require.NoError(t, b.Release(ctx, "r", "a", t1))
	m.SetTime(now.Add(1100 * time.Millisecond))
	t2, ok, err := b.TryAcquire(ctx, "r", "a", time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.Greater(t, t2, t1)

	// A re-send of the first release (its reply was lost) arrives now: it must leave the second holding.
	require.ErrorIs(t, b.Release(ctx, "r", "a", t1), ErrNotHeld)
	info, err := b.Leader(ctx, "r")
	require.NoError(t, err)
	require.Equal(t, "a", info.ID)
	require.Equal(t, t2, info.Term)
	require.ErrorIs(t, b.Renew(ctx, "r", "a", t1, time.Second), ErrNotHeld, "the earlier holding's renewal is refused too")
	require.NoError(t, b.Renew(ctx, "r", "a", t2, time.Second))
}

func TestRedisTermAndEpochKeysExpire(t *testing.T) {
	t.Parallel()
	m, b, now := miniBackend(t, RedisOptions{KeyTTL: time.Minute})
	ctx := context.Background()
	term := grant(t, m, b, "r", "a", now)
	for _, k := range []string{"election:{r}:term", "election:{r}:epoch"} {
		require.Equal(t, time.Minute, m.TTL(k), k)
	}
	m.FastForward(500 * time.Millisecond)
	require.Equal(t, time.Minute-500*time.Millisecond, m.TTL("election:{r}:epoch"))
	require.NoError(t, b.Renew(ctx, "r", "a", term, time.Second))
	require.Equal(t, time.Minute, m.TTL("election:{r}:epoch"), "renewals refresh the keys while the role is in use")
	require.NoError(t, b.Release(ctx, "r", "a", term))
	m.FastForward(time.Minute)
	require.Empty(t, m.Keys(), "an unused role leaves nothing behind")

	m2, b2, _ := miniBackend(t, RedisOptions{KeyTTL: time.Millisecond})
	_, _, err := b2.TryAcquire(ctx, "r", "a", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, m2.TTL("election:{r}:epoch"), "KeyTTL is raised to twice the holding TTL")
}

// A restart that loads a snapshot taken before the current holding brings back the epoch key without
// the holding. The guard must re-arm anyway (the epoch names another server run), or the role is granted
// at once while the old holder still believes. FLUSHALL without a restart must re-arm it too.
func TestRedisRestartFromOlderSnapshotRearmsGuard(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	b := NewRedisBackend(env.c, RedisOptions{})
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	acquire := func(id string) (uint64, bool) {
		t.Helper()
		term, ok, err := b.TryAcquire(ctx, "r", id, ttl)
		require.NoError(t, err)
		return term, ok
	}
	_, ok := acquire("a")
	require.False(t, ok, "a new role starts with the guard armed")
	require.NoError(t, env.c.Save(ctx).Err(), "the snapshot holds the epoch and no holding")
	var t1 uint64
	require.Eventually(t, func() bool { t1, ok = acquire("a"); return ok }, 10*ttl, 10*time.Millisecond)

	require.NoError(t, env.srv.Reload()) // kill -9, then start again loading the snapshot
	require.Eventually(t, func() bool { return env.c.Ping(ctx).Err() == nil }, 5*time.Second, 10*time.Millisecond)
	n, err := env.c.Exists(ctx, b.key("r", "epoch")).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the restart loaded the snapshot's epoch key")

	_, ok = acquire("b")
	require.False(t, ok, "a grant right after a restart that lost the holding: the old holder may still believe")
	var t2 uint64
	require.Eventually(t, func() bool { t2, ok = acquire("b"); return ok }, 10*ttl, 10*time.Millisecond)
	require.Greater(t, t2, t1)

	require.NoError(t, b.Release(ctx, "r", "b", t2))
	require.NoError(t, env.c.FlushAll(ctx).Err())
	_, ok = acquire("c")
	require.False(t, ok, "FLUSHALL re-arms the guard")
}
