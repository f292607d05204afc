package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
)

func TestBackendForScenarioTopology(t *testing.T) {
	t.Parallel()
	require.NoError(t, deploy.CheckSpec("sentinel"))
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
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	sc := sim.Scenario{Name: "kill-on-one-node", Instances: 1, Endpoints: 1, Duration: 20 * time.Second,
		Steps: chaos.Schedule{{At: 5 * time.Second, Fault: chaos.PrimaryKill{}}}}
	res, err := sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: 0.05, Backend: "server"})
	require.NoError(t, err)
	require.Len(t, res.FaultErrors, 1)
	require.Contains(t, res.FaultErrors[0], "--redis sentinel")
}

// A run on a Sentinel set: the primary is killed, the promotion is on the timeline after the kill, and
// the instances, each through its own links, carry on against the new primary.
func TestSentinelRunRecordsPromotionAndFollowsIt(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	sc := sim.Scenario{Name: "sentinel-kill-short", Instances: 2, Endpoints: 3, Duration: 80 * time.Second, Topology: sim.TopologySentinel,
		Steps: chaos.Schedule{{At: 30 * time.Second, Fault: chaos.PrimaryKill{}, Jitter: -1}}}
	res, err := sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	h := res.History
	require.Equal(t, "sentinel", h.Meta.Assumptions.Topology)
	require.Contains(t, h.Meta.Backend, "Sentinel set")
	var kill, promoted time.Duration = -1, -1
	for _, e := range h.Events {
		if e.Kind == history.KindFault && e.Fault.Name == "primary-kill" {
			kill = e.At
			require.Equal(t, "redis-0", e.Fault.Params["node"])
		}
		if e.Kind == history.KindNote && strings.HasPrefix(e.Note, history.NotePromotion+"redis-0 -> ") && promoted < 0 {
			promoted = e.At
		}
	}
	require.GreaterOrEqual(t, kill, time.Duration(0), "the kill is recorded")
	require.Greater(t, promoted, kill, "the promotion is recorded after the kill")
	// Every instance completes commands after the promotion: its client found the new primary.
	after := map[string]int{}
	for _, e := range h.Events {
		if e.Kind == history.KindOp && e.At > promoted && e.Op.Err == "" && !e.Op.Unknown {
			after[e.Instance]++
		}
	}
	require.Len(t, after, 2, "both instances reach the new primary: %v", after)
}
