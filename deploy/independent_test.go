package deploy_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Independent nodes as a deployment: the first node is "the primary"; a kill and a start leave it empty
// and the others as they were; every node pauses and has a peer link; nothing is promoted or migrated.
func TestIndependentRestartsItsFirstNodeEmpty(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	ctx := context.Background()
	d, err := deploy.Open(ctx, deploy.TopologyIndependent, deploy.Options{Peers: peers(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	require.Equal(t, deploy.TopologyIndependent, d.About().Topology)
	nodes := d.Nodes()
	require.Len(t, nodes, 3)
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Listen, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = clients[i].Close() })
		require.NoError(t, clients[i].Set(ctx, "k", n.Name, 0).Err())
		l, err := d.PeerLink(n.Name)
		require.NoError(t, err)
		require.Equal(t, n.Announced, l.Addr())
	}

	p, err := d.Primary(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, deploy.Serving{Node: "redis-0"}, p)
	require.NoError(t, d.Kill(ctx, p.Node))
	require.Error(t, clients[0].Ping(ctx).Err())
	started, err := d.StartKilled(ctx)
	require.NoError(t, err)
	require.Equal(t, []deploy.Rejoined{{Node: "redis-0", Role: "primary"}}, started)
	require.Equal(t, int64(0), clients[0].Exists(ctx, "k").Val(), "the restarted node is empty")
	require.Equal(t, "redis-1", clients[1].Get(ctx, "k").Val(), "the others keep their copies")
	require.Equal(t, int64(0), d.Admin().Exists(ctx, "k").Val(), "the harness's client reaches the first node")

	resume, err := d.Pause(ctx, "redis-2")
	require.NoError(t, err)
	require.Error(t, clients[2].Ping(ctx).Err(), "a paused node answers nothing")
	require.NoError(t, resume())
	require.Eventually(t, func() bool { return clients[2].Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)

	_, migrateErr := d.Migrate(ctx, "k", 0)
	for _, err := range []error{d.Promote(ctx), d.Save(ctx), d.Reload(ctx), migrateErr} {
		require.ErrorIs(t, err, deploy.ErrUnsupported)
	}
	require.ErrorContains(t, d.Kill(ctx, "redis-9"), `no node "redis-9"`)
}
