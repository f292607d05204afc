package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
	"github.com/tenurelabs/tenure/systems/reference"
)

// No Docker engine runs here (nor in most CI sandboxes): the container backend must say so clearly and
// quickly, not hang or panic.
func TestContainerBackendWithoutDockerFailsClearly(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := sim.OpenBackend(ctx, "container")
	if b != nil {
		_ = b.Close()
	}
	require.ErrorIs(t, err, sim.ErrNoDocker)
	require.Contains(t, err.Error(), "Docker engine")
	require.Contains(t, err.Error(), "--redis server")
}

func TestBackendSpecs(t *testing.T) {
	for _, bad := range []string{"bogus", "addr=", "addr=nohostport", "server:", "server:fsync", "embedded:rdb"} {
		require.Error(t, sim.CheckBackendSpec(bad), bad)
	}
	require.ErrorContains(t, sim.CheckBackendSpec("server:fsync"), "valid: server:none, server:rdb, server:aof")
	for _, good := range []string{"", "auto", "server", "server:none", "server:rdb", "server:aof", "embedded", "container", "addr=127.0.0.1:6379"} {
		require.NoError(t, sim.CheckBackendSpec(good), good)
	}
}

// The embedded backend expires keys in real time and comes back empty after a restart.
func TestEmbeddedBackendExpiresAndRestartsEmpty(t *testing.T) {
	ctx := context.Background()
	b, err := sim.OpenBackend(ctx, "embedded")
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	c := redis.NewClient(&redis.Options{Addr: b.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Set(ctx, "k", "v", 200*time.Millisecond).Err())
	require.Eventually(t, func() bool { return c.Exists(ctx, "k").Val() == 0 }, 5*time.Second, 20*time.Millisecond,
		"a key with a TTL must expire without anyone fast-forwarding time")
	require.NoError(t, c.Set(ctx, "keep", "v", 0).Err())
	require.NoError(t, b.Restart())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, int64(0), c.Exists(ctx, "keep").Val())
	require.Error(t, b.Pause(), "miniredis cannot be paused; the error must say so")
}

// An external Redis is never flushed: a run namespaces its keys and removes only those.
func TestExternalBackendIsLeftAsFound(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Set(ctx, "someone-elses", "data", 0).Err())
	require.NoError(t, c.Set(ctx, "session:theirs", `{"id":"theirs"}`, 0).Err())
	sc := sim.Scenario{Name: "ext", Instances: 2, Endpoints: 2, Duration: 50 * time.Second}
	res, err := sim.Run(ctx, sim.Options{System: reference.NewReference(), Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "addr=" + srv.Addr()})
	require.NoError(t, err)
	require.NotEmpty(t, res.History.Events)
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"someone-elses", "session:theirs"}, keys, "the run must leave exactly what it found")
}

// --redis server without the binary says how to install it.
func TestServerBackendWithoutBinarySaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := sim.OpenBackend(context.Background(), "server")
	require.ErrorContains(t, err, "apt-get install redis-server")
}

// A persistent server backend says so, and reloads its snapshot through chaos.PersistentBackend.
func TestServerBackendPersistence(t *testing.T) {
	ctx := context.Background()
	for spec, want := range map[string]string{"server": "none", "server:rdb": "rdb", "server:aof": "aof"} {
		b, err := sim.OpenBackend(ctx, spec)
		if errors.Is(err, redisserver.ErrNoBinary) && !redistest.Required() {
			t.Skip(err)
		}
		require.NoError(t, err)
		require.Equal(t, want, b.Persistence(), spec)
		pb, ok := b.(chaos.PersistentBackend)
		require.True(t, ok, spec)
		if want == "rdb" {
			c := redis.NewClient(&redis.Options{Addr: b.Addr()})
			require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
			require.NoError(t, pb.Save())
			require.NoError(t, c.Set(ctx, "later", "v", 0).Err())
			require.NoError(t, pb.Reload())
			require.Eventually(t, func() bool { return c.Get(ctx, "k").Val() == "v" }, 10*time.Second, 20*time.Millisecond)
			require.Equal(t, int64(0), c.Exists(ctx, "later").Val())
			_ = c.Close()
		}
		require.NoError(t, b.Close())
	}
	e, err := sim.OpenBackend(ctx, "embedded")
	require.NoError(t, err)
	require.Equal(t, "none", e.Persistence())
	require.NoError(t, e.Close())
}

// A schedule that restarts Redis from its files opens a server with that persistence, and refuses a
// backend that cannot have it.
func TestBackendForPersistenceFaults(t *testing.T) {
	snap := chaos.Schedule{{At: time.Second, For: time.Second, Fault: chaos.RedisRestartFromSnapshot{}}}
	aof := chaos.Schedule{{At: time.Second, Fault: chaos.RedisRestartAOF{}}}
	for _, tc := range []struct {
		spec string
		s    chaos.Schedule
		want string
	}{
		{"server", nil, "server"},
		{"embedded", nil, "embedded"},
		{"auto", snap, "server:rdb"},
		{"", snap, "server:rdb"},
		{"server", snap, "server:rdb"},
		{"server:rdb", snap, "server:rdb"},
		{"server", aof, "server:aof"},
	} {
		got, err := sim.BackendFor(tc.spec, tc.s)
		require.NoError(t, err, tc.spec)
		require.Equal(t, tc.want, got, tc.spec)
	}
	for _, tc := range []struct {
		spec string
		s    chaos.Schedule
	}{{"embedded", snap}, {"server:aof", snap}, {"addr=127.0.0.1:6379", aof}, {"server", append(snap, aof...)}} {
		_, err := sim.BackendFor(tc.spec, tc.s)
		require.Error(t, err, tc.spec)
	}
	_, err := sim.BackendFor("embedded", snap)
	require.ErrorContains(t, err, "--redis server:rdb")

	sc := sim.Scenario{Name: "x", Instances: 1, Endpoints: 1, Duration: time.Minute, Steps: snap}
	_, _, err = sim.Plan(sim.Options{System: baselines.Naive{}, Scenario: sc, TimeScale: 1, Backend: "embedded"})
	require.ErrorIs(t, err, sim.ErrOptions)
	_, _, err = sim.Plan(sim.Options{System: baselines.Naive{}, Scenario: sc, TimeScale: 1, Backend: "server"})
	require.NoError(t, err)
}
