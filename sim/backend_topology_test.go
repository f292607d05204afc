package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/sim"
)

func TestBackendForScenarioTopology(t *testing.T) {
	require.NoError(t, sim.CheckBackendSpec("sentinel"))
	// Private servers asked for (what CI passes): a Sentinel scenario gets a private Sentinel set.
	for _, spec := range []string{"", "auto", "server", "sentinel"} {
		got, err := sim.BackendForScenario(spec, sim.TopologySentinel, nil)
		require.NoError(t, err, spec)
		require.Equal(t, "sentinel", got, spec)
	}
	for _, spec := range []string{"embedded", "container", "addr=127.0.0.1:6379", "server:rdb"} {
		_, err := sim.BackendForScenario(spec, sim.TopologySentinel, nil)
		require.ErrorContains(t, err, "needs a Sentinel set", spec)
		require.ErrorContains(t, err, "--redis "+spec+" cannot provide; use --redis sentinel", spec)
	}
	// A single-node scenario runs on a Sentinel set when asked; a restart from files cannot.
	got, err := sim.BackendForScenario("sentinel", sim.TopologySingle, nil)
	require.NoError(t, err)
	require.Equal(t, "sentinel", got)
	_, err = sim.BackendForScenario("sentinel", sim.TopologySingle, chaos.Schedule{{Fault: chaos.RedisRestartFromSnapshot{}}})
	require.ErrorContains(t, err, "server:rdb")
	_, err = sim.BackendForScenario("", "cluster-of-one", nil)
	require.ErrorContains(t, err, "unknown topology")
}

// The replicated-backend faults refuse a single node clearly.
func TestReplicatedFaultsNeedSentinel(t *testing.T) {
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	sc := sim.Scenario{Name: "kill-on-one-node", Instances: 1, Endpoints: 1, Duration: 20 * time.Second,
		Steps: chaos.Schedule{{At: 5 * time.Second, Fault: chaos.PrimaryKill{}}}}
	res, err := sim.Run(context.Background(), sim.Options{System: sim.Naive{}, Scenario: sc, Seed: 1, TimeScale: 0.05, Backend: "server"})
	require.NoError(t, err)
	require.Len(t, res.FaultErrors, 1)
	require.Contains(t, res.FaultErrors[0], "--redis sentinel")
}
