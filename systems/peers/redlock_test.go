package peers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

// Redlock runs on three independent nodes the harness starts: every lock is taken on each node through
// the instance's own link to it, and the history keeps one copy of each key per node.
func TestRedlockUsesEveryNode(t *testing.T) {
	if _, ok := redisserver.Available(); !ok && !redistest.Required() {
		t.Skip("real-Redis test skipped: redis-server is not installed (set TENURE_REQUIRE_REDIS=1 to make this a failure)")
	}
	sc, err := scenarios.Get("single-instance")
	require.NoError(t, err)
	res, err := sim.Run(context.Background(), sim.Options{System: RedSync{Redlock: true}, Scenario: sc, Seed: 1,
		TimeScale: 0.05, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	require.Equal(t, sim.TopologyIndependent, res.History.Meta.Assumptions.Topology)
	granted := map[string]int{}
	for _, e := range res.History.Events {
		if e.Kind == history.KindOp && e.Op.Kind == history.OpAcquire && e.Op.OK {
			granted[e.Op.Node]++
		}
	}
	require.Len(t, granted, 3, "grants per node: %v", granted)
	for _, n := range []string{"redis-0", "redis-1", "redis-2"} {
		require.Positive(t, granted[n], "no grant recorded on %s: %v", n, granted)
	}
}

// Without the nodes, Redlock refuses to start and says how to get them.
func TestRedlockNeedsThreeNodes(t *testing.T) {
	_, err := RedSync{Redlock: true}.NewInstance(sim.InstanceConfig{ID: "a"})
	require.ErrorContains(t, err, "--redis independent")
}
