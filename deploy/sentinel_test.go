package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

func startSentinel(t *testing.T) *deploy.Sentinel {
	t.Helper()
	return startSentinelWith(t, deploy.SentinelOptions{TimeScale: 0.1})
}

func startSentinelWith(t *testing.T, o deploy.SentinelOptions) *deploy.Sentinel {
	t.Helper()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	ctx := context.Background()
	if o.Proxies == nil {
		o.Proxies = peers(t)
	}
	s, err := deploy.StartSentinel(ctx, o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// clientLinks gives a client its own proxy in front of every node, as the harness gives each instance.
func clientLinks(t *testing.T, s *deploy.Sentinel) (map[string]chaos.Link, deploy.Dialer) {
	t.Helper()
	p := chaos.NewEmbedded(2)
	t.Cleanup(func() { _ = p.Close() })
	links := map[string]chaos.Link{}
	local := map[string]string{}
	for _, n := range s.Nodes() {
		l, err := p.NewLink("client-"+n.Name, n.Listen)
		require.NoError(t, err)
		links[n.Name] = l
		local[n.Announced] = l.Addr()
	}
	return links, deploy.MapDialer(local, time.Second)
}

func TestSentinelPromotesAndClientFollows(t *testing.T) {
	t.Parallel()
	logs := t.TempDir()
	// A tenth of spec time: down-after 2 s (its floor; 500 ms scaled).
	s := startSentinelWith(t, deploy.SentinelOptions{TimeScale: 0.1, LogDir: logs})
	ctx := context.Background()
	require.Len(t, s.DataNodes(), 3)
	require.Len(t, s.Sentinels(), 3)

	p, err := s.PrimaryNode(ctx)
	require.NoError(t, err)
	require.Equal(t, "redis-0", p.Name)

	_, dial := clientLinks(t, s)
	c := s.NewClient(deploy.ClientOptions{DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, PoolSize: 2, MaxRetries: 0}, dial)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Set(ctx, "k", "before", 0).Err())

	promoted := make(chan deploy.Promotion, 4)
	stop := s.WatchPromotions(ctx, func(p deploy.Promotion) { promoted <- p })
	defer stop()

	srv, err := s.Server(p.Name)
	require.NoError(t, err)
	killed := time.Now()
	require.NoError(t, srv.Kill())

	select {
	case pr := <-promoted:
		require.Equal(t, "redis-0", pr.From)
		require.NotEqual(t, "redis-0", pr.To)
		t.Logf("promotion %s -> %s %v after the kill (down-after %s)", pr.From, pr.To, pr.At.Sub(killed).Round(time.Millisecond), s.DownAfter())
	case <-time.After(30 * time.Second):
		t.Fatal("no promotion within 30 s of killing the primary")
	}
	np, err := s.PrimaryNode(ctx)
	require.NoError(t, err)
	require.NotEqual(t, "redis-0", np.Name)

	// The client follows the promotion through its own proxies: the key written before the kill was
	// replicated (the replicas were in sync), and writes land on the new primary.
	require.Eventually(t, func() bool { return c.Set(ctx, "k2", "after", 0).Err() == nil }, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "before", c.Get(ctx, "k").Val())
	direct := s.Direct()
	defer direct.Close()
	require.Equal(t, "after", direct.Get(ctx, "k2").Val())

	// The nodes' logs are kept when asked for: the sentinels' decisions can be read after the run. The
	// sentinel that announced the promotion logged it before publishing it (the others, the failover's
	// leader among them, may not have switched yet).
	require.NoError(t, s.Close())
	switched := 0
	for _, n := range s.Nodes() {
		b, err := os.ReadFile(filepath.Join(logs, n.Name+".log"))
		require.NoError(t, err)
		if n.Sentinel && strings.Contains(string(b), "+switch-master") {
			switched++
		}
	}
	require.Positive(t, switched, "a sentinel's log records the switch")
}

// A fault on a client's links leaves the peer traffic alone, and a client never dials an address that
// is not a node's.
func TestSentinelClientLinksAreTheClientsOwn(t *testing.T) {
	t.Parallel()
	s := startSentinel(t)
	ctx := context.Background()
	links, dial := clientLinks(t, s)
	c := s.NewClient(deploy.ClientOptions{DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, PoolSize: 2, MaxRetries: -1}, dial)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	for _, l := range links {
		require.NoError(t, l.Partition())
	}
	require.Error(t, c.Set(ctx, "k", "w", 0).Err(), "a client whose links are cut must not reach the primary")
	// The set itself is unaffected: still settled after more than down-after.
	time.Sleep(2 * s.DownAfter())
	require.NoError(t, s.WaitSettled(ctx, 5*time.Second))
	for _, l := range links {
		require.NoError(t, l.Heal())
	}
	require.Eventually(t, func() bool { return c.Set(ctx, "k", "w", 0).Err() == nil }, 5*time.Second, 20*time.Millisecond)

	_, err := dial(ctx, "tcp", "127.0.0.1:1")
	require.Error(t, err)
	require.Contains(t, err.Error(), "not the announced address of a node")
}

// Isolating the primary's peer link makes the sentinels promote a replica while a client with its own
// links still writes to the old primary: the writes it acknowledges are discarded when the old primary
// rejoins as a replica.
func TestSentinelIsolatedPrimaryLosesAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	s := startSentinel(t)
	ctx := context.Background()
	p, err := s.PrimaryNode(ctx)
	require.NoError(t, err)
	peer, err := s.PeerLink(p.Name)
	require.NoError(t, err)
	old, err := s.Server(p.Name)
	require.NoError(t, err)
	_ = old

	promoted := make(chan deploy.Promotion, 4)
	stop := s.WatchPromotions(ctx, func(p deploy.Promotion) { promoted <- p })
	defer stop()
	require.NoError(t, peer.Partition())

	// Straight to the old primary (as a client whose sentinel has not told it yet).
	direct := redisClient(p.Listen)
	defer direct.Close()
	var pr deploy.Promotion
	select {
	case pr = <-promoted:
	case <-time.After(30 * time.Second):
		t.Fatal("no promotion within 30 s of isolating the primary")
	}
	require.NoError(t, direct.Set(ctx, "lost", "acknowledged", 0).Err(), "the isolated primary still acknowledges writes")
	require.NoError(t, peer.Heal())
	// The old primary is turned into a replica of the new one and drops what it acknowledged alone.
	err = waitUntil(20*time.Second, func() error {
		role, err := direct.Do(ctx, "ROLE").Slice()
		if err != nil {
			return err
		}
		if role[0] != "slave" {
			return fmt.Errorf("old primary still %v", role[0])
		}
		if n := direct.Exists(ctx, "lost").Val(); n != 0 {
			return errors.New("the write is still there")
		}
		return nil
	})
	require.NoError(t, err, "promotion %s -> %s", pr.From, pr.To)
}

// A Sentinel set as a deployment: its primary is the one the sentinels name, whatever the key; Promote
// is a graceful failover, which Watch reports; it keeps no files and has no slots.
func TestSentinelAsDeployment(t *testing.T) {
	t.Parallel()
	s := startSentinel(t)
	ctx := context.Background()
	var d deploy.Deployment = s
	require.Equal(t, deploy.TopologySentinel, d.About().Topology)
	require.Contains(t, d.About().Describe, "Sentinel set")
	p, err := d.Primary(ctx, "any-key")
	require.NoError(t, err)
	require.Equal(t, deploy.Serving{Node: "redis-0"}, p)
	require.NoError(t, d.Admin().Set(ctx, "k", "v", 0).Err())

	promoted := make(chan deploy.Promotion, 4)
	stop := d.Watch(ctx, func(pr deploy.Promotion) { promoted <- pr })
	defer stop()
	require.NoError(t, d.Promote(ctx))
	select {
	case pr := <-promoted:
		require.Equal(t, "redis-0", pr.From)
		require.NotEqual(t, "redis-0", pr.To)
	case <-time.After(30 * time.Second):
		t.Fatal("no promotion within 30 s of SENTINEL FAILOVER")
	}
	_, migrateErr := d.Migrate(ctx, "k", 0)
	for _, err := range []error{d.Save(ctx), d.Reload(ctx), migrateErr} {
		require.ErrorIs(t, err, deploy.ErrUnsupported)
	}
}

func waitUntil(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSentinelRefusesWithoutBinary(t *testing.T) {
	_, err := deploy.StartSentinel(context.Background(), deploy.SentinelOptions{Binary: "/nonexistent/redis-server", Proxies: peers(t)})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "redis-server") || errors.Is(err, redisserver.ErrNoBinary), err.Error())
	t.Setenv("PATH", t.TempDir())
	_, err = deploy.StartSentinel(context.Background(), deploy.SentinelOptions{})
	require.ErrorIs(t, err, redisserver.ErrNoBinary)
	_, err = deploy.Open(context.Background(), "sentinel", deploy.Options{Peers: peers(t)})
	require.ErrorContains(t, err, "apt-get install redis-server")
}

// peers are the proxies a test's deployment announces its nodes at, on a toxiproxy of the test's own.
func peers(t *testing.T) deploy.Proxies {
	t.Helper()
	p := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = p.Close() })
	return chaos.ForDeploy(p, "")
}

func redisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
}
