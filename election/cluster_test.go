package election

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// The Redis election on Redis Cluster (real processes; package deploy): a role's keys share its
// hash slot, and a promoted replica re-arms the role's guard.
func TestRedisClusterPrimaryKillKeepsOneLeader(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		if os.Getenv("TENURE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found and TENURE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not found")
	}
	embedded := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = embedded.Close() })
	px := chaos.ForDeploy(embedded, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := deploy.StartCluster(ctx, deploy.ClusterOptions{Proxies: px, NodeTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	role := uniqueRole(t)
	f := newFleet(t, 3,
		func(i int) Backend {
			links, err := c.NewClientLinks(px, fmt.Sprintf("n%d", i))
			require.NoError(t, err)
			t.Cleanup(links.Close)
			cl := c.Client(links, &redis.ClusterOptions{ContextTimeoutEnabled: true, MaxRedirects: 8,
				DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
				MinRetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond})
			t.Cleanup(func() { _ = cl.Close() })
			return NewRedisBackend(cl, RedisOptions{})
		},
		func(i int) Config { return testConfig(t, role, fmt.Sprintf("n%d", i), uint64(i+1)) })
	f.start(t)
	f.leader(t, testTTL+10*time.Second)
	first, _ := f.nextStart(t, time.Second)

	killedAt := time.Now()
	_, _, err = c.KillPrimary(ctx, NewRedisBackend(nil, RedisOptions{}).key(role, "leader"))
	require.NoError(t, err)
	term, at := f.nextStart(t, 3*testTTL+10*time.Second)
	t.Logf("leader again %s after the kill", at.Sub(killedAt).Round(time.Millisecond))
	require.Greater(t, term, first, "terms keep increasing across the promotion")
	f.leader(t, time.Second)
	f.finish(t) // no two leaders acting or believing at once
}
