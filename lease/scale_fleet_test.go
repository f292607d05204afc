package lease

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// Every heartbeat registers the instance; the registry lists it (as its node key) whether or not the
// key still exists, and entries older than registryPrune are removed when it is read.
func TestFleetRegistry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := newClient(t, srv.Addr())
	ctx := context.Background()
	cfg := testConfig()
	cfg.Targets, cfg.Logger = StaticTargets{"a"}, quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	build := func(id string) *Manager {
		c := cfg
		c.InstanceID = id
		m, err := New(client, c)
		require.NoError(t, err)
		return m
	}
	a, b := build("a"), build("b")
	require.NoError(t, a.heartbeat(ctx))
	require.NoError(t, b.heartbeat(ctx))
	ttl, err := client.PTTL(ctx, "poll:node:a").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "the node key has its TTL")

	// An entry from an instance that died long ago.
	old := float64(time.Now().Add(-registryPrune - time.Minute).UnixMilli())
	require.NoError(t, client.ZAdd(ctx, "poll:nodes", redis.Z{Score: old, Member: "gone"}).Err())
	require.NoError(t, client.Del(ctx, "poll:node:b").Err()) // b stopped: its entry stays, its key is gone

	got, expiries, err := a.registered(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b"}, got)
	require.Len(t, expiries, 2)
	for _, at := range expiries {
		require.WithinDuration(t, time.Now().Add(a.cfg.HeartbeatTTL), at, 5*time.Second, "an entry's score is its heartbeat's expiry")
	}
	n, err := client.ZCard(ctx, "poll:nodes").Result()
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "the old entry was pruned")
}
