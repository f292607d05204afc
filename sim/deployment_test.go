package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
	"github.com/tenurelabs/tenure/systems/reference"
)

// An external Redis is never flushed: a run namespaces its keys and removes only those.
func TestExternalBackendIsLeftAsFound(t *testing.T) {
	t.Parallel()
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

// A schedule that restarts Redis from its files opens a server with that persistence, and refuses a
// backend that cannot have it.
func TestBackendForPersistenceFaults(t *testing.T) {
	t.Parallel()
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
