package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// A cluster scenario gets a private Redis Cluster when private servers are asked for, and is refused
// with what it needs on any backend that cannot start one.
func TestBackendForScenarioCluster(t *testing.T) {
	t.Parallel()
	require.NoError(t, deploy.CheckSpec("cluster"))
	for _, spec := range []string{"", "auto", "server", "cluster"} {
		got, err := sim.BackendForScenario(spec, sim.TopologyCluster, nil)
		require.NoError(t, err, spec)
		require.Equal(t, "cluster", got, spec)
	}
	for _, spec := range []string{"embedded", "container", "addr=127.0.0.1:6379", "server:aof", "sentinel", "independent"} {
		_, err := sim.BackendForScenario(spec, sim.TopologyCluster, nil)
		require.ErrorContains(t, err, "needs a Redis Cluster", spec)
		require.ErrorContains(t, err, "--redis "+spec+" cannot provide; use --redis cluster", spec)
	}
	_, err := sim.BackendForScenario("cluster", sim.TopologySentinel, nil)
	require.ErrorContains(t, err, "use --redis sentinel")
}

// The cluster faults on a single node are refused as unsupported, naming the backend they need.
func TestShardedFaultsNeedCluster(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	sc := sim.Scenario{Name: "shard-kill-on-one-node", Instances: 1, Endpoints: 1, Duration: 20 * time.Second,
		Steps: chaos.Schedule{{At: 5 * time.Second, Fault: chaos.ShardPrimaryKill{Of: "ep-0"}}}}
	res, err := sim.Run(context.Background(), sim.Options{System: reference.NewReference(), Scenario: sc, Seed: 1, TimeScale: 0.05, Backend: "server"})
	require.NoError(t, err)
	require.Len(t, res.FaultErrors, 1)
	require.Contains(t, res.FaultErrors[0], "--redis cluster")
}

// A run of the reference on a Redis Cluster: it completes, records lease operations on keys in several
// slots through each instance's ClusterClient, kills the primary of ep-0's shard, notes the promotion
// after the kill, and passes the checker.
func TestClusterRunWithReference(t *testing.T) {
	t.Parallel()
	if _, ok := redisserver.Available(); !ok {
		t.Skip("redis-server not installed")
	}
	// 150 s of spec time: after the kill at 40 s, the promotion and a fresh-dataset guard, the killed
	// shard's endpoints are held and renewed again well before the end, also on a loaded machine.
	sc := sim.Scenario{Name: "cluster-kill-short", Instances: 2, Endpoints: 4, Duration: 150 * time.Second, Topology: sim.TopologyCluster,
		Steps:   chaos.Schedule{{At: 40 * time.Second, Fault: chaos.ShardPrimaryKill{Of: "ep-0"}, Jitter: -1}},
		Fencing: true, Outside: []string{chaos.ShardPrimaryKill{}.Name()}}
	res, err := sim.Run(context.Background(), sim.Options{System: reference.NewReference(), Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "auto"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	h := res.History
	require.Equal(t, "cluster", h.Meta.Assumptions.Topology)
	require.Contains(t, h.Meta.Backend, "Redis Cluster")
	var kill, promoted time.Duration = -1, -1
	var killed string
	renews := map[string]int{}
	for _, e := range h.Events {
		switch {
		case e.Kind == history.KindFault && e.Fault.Name == "shard-primary-kill":
			kill, killed = e.At, e.Fault.Params["node"]
			// The killed primary's slots, for the checker to tell the endpoints it spared.
			require.Regexp(t, `^\d+-\d+(,\d+-\d+)*$`, e.Fault.Params[checker.ShardSlotsParam])
		case e.Kind == history.KindNote && strings.HasPrefix(e.Note, history.NotePromotion) && promoted < 0:
			promoted = e.At
			require.True(t, strings.HasPrefix(e.Note, history.NotePromotion+killed+" -> "), e.Note)
		case e.Kind == history.KindOp && e.Op.Kind == history.OpRenew && e.Op.OK:
			renews[e.Endpoint]++
		}
	}
	require.GreaterOrEqual(t, kill, time.Duration(0), "the kill is recorded")
	require.Greater(t, promoted, kill, "the promotion is recorded after the kill")
	require.Len(t, renews, 4, "every endpoint's lease is renewed (keys in several slots): %v", renews)
	r := checker.Check(h, checker.DefaultOptions())
	requireJudgedOK(t, r)
}
