package deploy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// open opens spec for a test, skipping it where redis-server is missing (unless required), and closes
// it when the test ends.
func open(t *testing.T, spec string) deploy.Deployment {
	t.Helper()
	d, err := deploy.Open(context.Background(), spec, deploy.Options{})
	if errors.Is(err, redisserver.ErrNoBinary) && !redistest.Required() {
		t.Skip(err)
	}
	require.NoError(t, err, spec)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// No Docker engine runs here (nor in most CI sandboxes): the container deployment must say so clearly
// and quickly, not hang or panic.
func TestContainerWithoutDockerFailsClearly(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := deploy.Open(ctx, "container", deploy.Options{})
	if d != nil {
		_ = d.Close()
	}
	require.ErrorIs(t, err, deploy.ErrNoDocker)
	require.Contains(t, err.Error(), "Docker engine")
	require.Contains(t, err.Error(), "--redis server")
}

func TestSpecs(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"bogus", "addr=", "addr=nohostport", "server:", "server:fsync", "embedded:rdb"} {
		require.Error(t, deploy.CheckSpec(bad), bad)
	}
	require.ErrorIs(t, deploy.CheckSpec("bogus"), deploy.ErrSpec)
	require.ErrorContains(t, deploy.CheckSpec("server:fsync"), "valid: server:none, server:rdb, server:aof")
	for _, good := range []string{"", "auto", "server", "server:none", "server:rdb", "server:aof", "embedded", "container", "addr=127.0.0.1:6379",
		"sentinel", "independent", "cluster"} {
		require.NoError(t, deploy.CheckSpec(good), good)
	}
	_, err := deploy.Open(context.Background(), "bogus", deploy.Options{})
	require.ErrorIs(t, err, deploy.ErrSpec)
}

// Which deployments refuse to kill or pause their Redis, said before anything starts.
func TestRefuses(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"server", "server:rdb", "sentinel", "cluster", "independent"} {
		require.Empty(t, deploy.Refuses(spec, true), spec)
	}
	require.Empty(t, deploy.Refuses("embedded", false))
	require.Contains(t, deploy.Refuses("embedded", true), "cannot pause")
	require.NotEmpty(t, deploy.Refuses("container", false))
	require.Contains(t, deploy.Refuses("addr=127.0.0.1:6379", false), "external Redis")
}

// The embedded deployment expires keys in real time, comes back empty after a kill, and refuses a
// pause and the files it does not keep.
func TestEmbeddedExpiresAndRestartsEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, "embedded")
	c := redis.NewClient(&redis.Options{Addr: d.Nodes()[0].Listen})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Set(ctx, "k", "v", 200*time.Millisecond).Err())
	require.Eventually(t, func() bool { return c.Exists(ctx, "k").Val() == 0 }, 5*time.Second, 20*time.Millisecond,
		"a key with a TTL must expire without anyone fast-forwarding time")
	require.NoError(t, c.Set(ctx, "keep", "v", 0).Err())
	p, err := d.Primary(ctx, "keep")
	require.NoError(t, err)
	require.Equal(t, "redis-0", p.Node)
	require.NoError(t, d.Kill(ctx, p.Node))
	started, err := d.StartKilled(ctx)
	require.NoError(t, err)
	require.Equal(t, []deploy.Rejoined{{Node: "redis-0", Role: "primary"}}, started)
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, int64(0), c.Exists(ctx, "keep").Val())
	_, err = d.Pause(ctx, p.Node)
	require.ErrorIs(t, err, deploy.ErrUnsupported, "miniredis cannot be paused; the error must say so")
	require.ErrorContains(t, err, "--redis server")
	require.ErrorIs(t, d.Reload(ctx), deploy.ErrUnsupported)
	require.ErrorContains(t, d.Kill(ctx, "redis-1"), `no node "redis-1" (nodes: redis-0)`)
}

// --redis server without the binary says how to install it.
func TestServerWithoutBinarySaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := deploy.Open(context.Background(), "server", deploy.Options{})
	require.ErrorContains(t, err, "apt-get install redis-server")
}

// A server reports its persistence, and one with RDB reloads its snapshot; a kill and a start come back
// empty whatever the persistence.
func TestServerPersistence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for spec, want := range map[string]string{"server": "none", "server:rdb": "rdb", "server:aof": "aof"} {
		d := open(t, spec)
		require.Equal(t, want, d.About().Persistence, spec)
		c := redis.NewClient(&redis.Options{Addr: d.Nodes()[0].Listen})
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
		if want == "rdb" {
			require.NoError(t, d.Save(ctx))
			require.NoError(t, c.Set(ctx, "later", "v", 0).Err())
			require.NoError(t, d.Reload(ctx))
			require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "v" }, 10*time.Second, 20*time.Millisecond)
			require.Equal(t, int64(0), c.Exists(ctx, "later").Val())
		}
		require.NoError(t, d.Kill(ctx, "redis-0"))
		_, err := d.StartKilled(ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 10*time.Second, 20*time.Millisecond)
		require.Equal(t, int64(0), c.Exists(ctx, "k").Val(), "%s: a start after a kill is empty", spec)
	}
}

// A user's Redis is reached and never hurt: every verb that would act on it is refused, saying what
// would do it, and it is shared (a run keeps to keys of its own).
func TestExternalRefusesToHurt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	d := open(t, "addr="+srv.Addr())
	require.True(t, d.About().Shared)
	require.Equal(t, deploy.TopologySingle, d.About().Topology)
	require.NoError(t, d.Admin().Ping(ctx).Err())
	p, err := d.Primary(ctx, "")
	require.NoError(t, err)
	_, pauseErr := d.Pause(ctx, p.Node)
	_, startErr := d.StartKilled(ctx)
	_, migrateErr := d.Migrate(ctx, "k", 0)
	_, peerErr := d.PeerLink(p.Node)
	for verb, err := range map[string]error{"kill": d.Kill(ctx, p.Node), "pause": pauseErr, "start": startErr, "save": d.Save(ctx),
		"reload": d.Reload(ctx), "promote": d.Promote(ctx), "migrate": migrateErr, "peer link": peerErr} {
		require.ErrorIs(t, err, deploy.ErrUnsupported, verb)
		require.ErrorContains(t, err, "use --redis", verb)
	}
	require.True(t, srv.Running(), "the user's Redis is untouched")
}

// A private server is paused until resumed, and refuses what takes several nodes.
func TestServerPausesAndRefusesWhatTakesSeveralNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, "server")
	resume, err := d.Pause(ctx, "redis-0")
	require.NoError(t, err)
	c := redis.NewClient(&redis.Options{Addr: d.Nodes()[0].Listen, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	require.Error(t, c.Ping(ctx).Err(), "a paused server answers nothing")
	require.NoError(t, resume())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	_, migrateErr := d.Migrate(ctx, "k", 0)
	_, peerErr := d.PeerLink("redis-0")
	for _, err := range []error{d.Promote(ctx), migrateErr, peerErr} {
		require.ErrorIs(t, err, deploy.ErrUnsupported)
	}
}
