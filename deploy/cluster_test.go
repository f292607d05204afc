package deploy_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// startTestCluster starts a cluster for a test, or skips the test without redis-server (fails with
// TENURE_REQUIRE_REDIS=1).
func startTestCluster(t *testing.T) (*deploy.Cluster, deploy.Proxies) {
	t.Helper()
	if _, ok := redisserver.Available(); !ok {
		if os.Getenv("TENURE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found and TENURE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not found")
	}
	px := peers(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := deploy.StartCluster(ctx, deploy.ClusterOptions{Proxies: px, NodeTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, px
}

func TestClusterStartsWholeAndFailsOver(t *testing.T) {
	t.Parallel()
	c, px := startTestCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.Check(ctx))

	links, err := c.NewClientLinks(px, "client")
	require.NoError(t, err)
	t.Cleanup(links.Close)
	cl := c.Client(links, &redis.ClusterOptions{MaxRedirects: 8, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = cl.Close() })
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		require.NoError(t, cl.Set(ctx, k, k, 0).Err())
	}

	// As a Deployment: named nodes, their processes and peer links, and a client through a MapDialer.
	var topo = c
	require.Len(t, topo.Nodes(), 6)
	local := map[string]string{}
	for announced, l := range links.Links {
		local[announced] = l.Addr()
	}
	for _, n := range topo.Nodes() {
		srv, err := topo.Server(n.Name)
		require.NoError(t, err)
		require.Equal(t, n.Listen, srv.Addr())
		peer, err := topo.PeerLink(n.Name)
		require.NoError(t, err)
		require.Equal(t, n.Announced, peer.Addr())
		require.Contains(t, local, n.Announced)
	}
	_, err = topo.Server("nope")
	require.ErrorContains(t, err, "redis-0")
	tc := topo.NewClient(deploy.ClientOptions{DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}, deploy.MapDialer(local, time.Second))
	t.Cleanup(func() { _ = tc.Close() })
	require.Equal(t, "c", tc.Get(ctx, "c").Val())

	// Only the client's own proxies carry its traffic: cutting them stops it.
	for _, l := range links.Links {
		require.NoError(t, l.Partition())
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	require.Error(t, cl.Get(short, "a").Err())
	cancelShort()
	for _, l := range links.Links {
		require.NoError(t, l.Heal())
		require.NoError(t, l.Reset())
	}

	require.Eventually(t, func() bool { return cl.Get(ctx, "b").Val() == "b" }, 10*time.Second, 50*time.Millisecond, "healed links carry traffic again")

	// Replicated before the kill, so the promoted replica has it.
	slot, err := c.Slot(ctx, "a")
	require.NoError(t, err)
	p, err := c.PrimaryOf(ctx, slot)
	require.NoError(t, err)
	// WAIT counts the writes of its own connection; replication is in order, so a write of ours
	// acknowledged by the replica follows the client's.
	conn := p.Control().Conn()
	require.NoError(t, conn.Set(ctx, "a", "a", 0).Err())
	require.Equal(t, int64(1), conn.Do(ctx, "WAIT", 1, 5000).Val())
	_ = conn.Close()
	killed, promoted, err := c.KillPrimary(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, p, killed)
	require.NotEqual(t, killed, promoted)

	// The client learns the new owner from its periodic state reload (250ms, see Client).
	require.Eventually(t, func() bool { return cl.Get(ctx, "a").Val() == "a" }, 20*time.Second, 50*time.Millisecond)

	// Migrate another key's slot to a different primary while it is read.
	slotB, err := c.Slot(ctx, "b")
	require.NoError(t, err)
	from, err := c.PrimaryOf(ctx, slotB)
	require.NoError(t, err)
	var to *deploy.ClusterNode
	for _, s := range []int{0, 5462, 10925} {
		if n, err := c.PrimaryOf(ctx, s); err == nil && n != from {
			to = n
			break
		}
	}
	require.NotNil(t, to)
	require.NoError(t, c.MigrateSlot(ctx, slotB, to, 1, 0))
	now, err := c.PrimaryOf(ctx, slotB)
	require.NoError(t, err)
	require.Equal(t, to, now)
	require.Equal(t, "b", cl.Get(ctx, "b").Val())

	// The bus goes through the announced bus proxies: cut one node's and the others' pings to it go
	// unanswered (its own pings to them still arrive, through their proxies, which is why it is not
	// marked failed: see the package notes).
	var victim *deploy.ClusterNode
	for _, n := range c.Members() {
		if n.Server.Running() && n != to && n != from {
			victim = n
			break
		}
	}
	require.NotNil(t, victim)
	pongAge := func() time.Duration {
		nodes, err := to.Control().ClusterNodes(ctx).Result()
		require.NoError(t, err)
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) > 5 && f[0] == victim.ID {
				ms, err := strconv.ParseInt(f[5], 10, 64)
				require.NoError(t, err)
				return time.Since(time.UnixMilli(ms))
			}
		}
		t.Fatalf("%s does not list %s", to.Announced(), victim.ID)
		return 0
	}
	require.NoError(t, victim.BusLink.Partition())
	require.Eventually(t, func() bool { return pongAge() > 4*time.Second }, 20*time.Second, 50*time.Millisecond,
		"no pong from a node whose bus link is cut")
	require.NoError(t, victim.BusLink.Heal())
	require.Eventually(t, func() bool { return pongAge() < 2*time.Second }, 20*time.Second, 50*time.Millisecond,
		"pongs again once healed")
}

// A killed primary started again rejoins from its nodes.conf as a replica of the node promoted in its
// place, copies its dataset, and can take the shard over again when that node dies in turn.
func TestClusterKilledPrimaryRejoinsAsReplica(t *testing.T) {
	t.Parallel()
	c, px := startTestCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	links, err := c.NewClientLinks(px, "client")
	require.NoError(t, err)
	t.Cleanup(links.Close)
	cl := c.Client(links, &redis.ClusterOptions{MaxRedirects: 8, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = cl.Close() })

	// written and replicated before the kill, so the promoted replica has it
	slot, err := c.Slot(ctx, "k")
	require.NoError(t, err)
	p, err := c.PrimaryOf(ctx, slot)
	require.NoError(t, err)
	conn := p.Control().Conn()
	require.NoError(t, conn.Set(ctx, "k", "v1", 0).Err())
	require.Equal(t, int64(1), conn.Do(ctx, "WAIT", 1, 5000).Val())
	_ = conn.Close()

	_, _, err = c.RestartNode(ctx, p)
	require.ErrorContains(t, err, "is running", "a live node is not restarted")

	killed, promoted, err := c.KillPrimary(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, p, killed)
	require.Equal(t, []*deploy.ClusterNode{killed}, c.Killed())
	require.Error(t, c.Check(ctx), "a shard without a replica is not whole")
	// written after the promotion: only a node that resynchronised from the promoted one has it
	require.Eventually(t, func() bool { return cl.Set(ctx, "k", "v2", 0).Err() == nil }, 20*time.Second, 50*time.Millisecond)

	restartAt := time.Now()
	role, of, err := c.RestartNode(ctx, killed)
	require.NoError(t, err)
	t.Logf("%s rejoined as a replica of %s %s after its restart", killed.Name, of.Name, time.Since(restartAt).Round(time.Millisecond))
	require.Equal(t, "slave", role)
	require.Equal(t, promoted, of, "it replicates the node that took its slots")
	require.Empty(t, c.Killed())
	require.NoError(t, c.Check(ctx))
	ro := killed.Control().Conn()
	require.NoError(t, ro.ReadOnly(ctx).Err())
	require.Eventually(t, func() bool { return ro.Get(ctx, "k").Val() == "v2" }, 10*time.Second, 50*time.Millisecond,
		"the rejoined replica holds what was written while it was down")
	_ = ro.Close()

	// The rejoined node is a working replica: kill the primary in its place and it takes the shard back.
	conn = promoted.Control().Conn()
	require.Equal(t, int64(1), conn.Do(ctx, "WAIT", 1, 5000).Val())
	_ = conn.Close()
	again, back, err := c.KillPrimary(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, promoted, again)
	require.Equal(t, killed, back)
	require.Eventually(t, func() bool { return cl.Get(ctx, "k").Val() == "v2" }, 20*time.Second, 50*time.Millisecond)
	role, of, err = c.RestartNode(ctx, promoted)
	require.NoError(t, err)
	require.Equal(t, "slave", role)
	require.Equal(t, killed, of)
}

// A Redis Cluster as a deployment: the primary of a key is the one serving its slot, with every slot it
// serves; killing it while watched reports the replica promoted in its place; starting it again waits
// until it has rejoined as that replica's replica; and nothing is promoted on request or reloaded.
func TestClusterAsDeployment(t *testing.T) {
	t.Parallel()
	c, _ := startTestCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var d deploy.Deployment = c
	require.Equal(t, deploy.TopologyCluster, d.About().Topology)
	require.NoError(t, d.Admin().Set(ctx, "k", "v", 0).Err())

	p, err := d.Primary(ctx, "k")
	require.NoError(t, err)
	slot, err := c.Slot(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, slot, p.Slot)
	require.Regexp(t, `^\d+-\d+(,\d+-\d+)*$`, p.Slots)
	first, err := d.Primary(ctx, "")
	require.NoError(t, err)
	require.Equal(t, 0, first.Slot)
	require.Equal(t, "redis-0", first.Node, "slot 0's primary, as created")

	promoted := make(chan deploy.Promotion, 4)
	stop := d.Watch(ctx, func(pr deploy.Promotion) { promoted <- pr })
	defer stop()
	require.NoError(t, d.Kill(ctx, p.Node))
	var pr deploy.Promotion
	select {
	case pr = <-promoted:
	case <-time.After(30 * time.Second):
		t.Fatal("no promotion reported within 30 s of killing the primary")
	}
	require.Equal(t, p.Node, pr.From)
	now, err := d.Primary(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, pr.To, now.Node)

	rejoined, err := d.StartKilled(ctx)
	require.NoError(t, err)
	require.Equal(t, []deploy.Rejoined{{Node: p.Node, Role: "replica", Of: pr.To}}, rejoined)
	require.Equal(t, p.Node+": replica of "+pr.To, rejoined[0].String())

	require.ErrorIs(t, d.Promote(ctx), deploy.ErrUnsupported)
	require.ErrorIs(t, d.Save(ctx), deploy.ErrUnsupported)
}
