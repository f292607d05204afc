package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type topologyStub struct{ planOnly }

func (topologyStub) Topology() string { return TopologyIndependent }

// A system that needs independent nodes runs any one-node scenario on them, refuses a scenario that
// needs another topology, and refuses a backend that cannot start them.
func TestTopologyNeed(t *testing.T) {
	t.Parallel()
	need, err := TopologyNeed(topologyStub{}, TopologySingle)
	require.NoError(t, err)
	require.Equal(t, TopologyIndependent, need)
	_, err = TopologyNeed(topologyStub{}, TopologySentinel)
	require.ErrorContains(t, err, "needs a sentinel topology")

	need, err = TopologyNeed(planOnly{}, TopologySentinel)
	require.NoError(t, err)
	require.Equal(t, TopologySentinel, need)

	for _, spec := range []string{"", "auto", "server", TopologyIndependent} {
		got, err := BackendForScenario(spec, TopologyIndependent, nil)
		require.NoError(t, err, spec)
		require.Equal(t, TopologyIndependent, got)
	}
	_, err = BackendForScenario("embedded", TopologyIndependent, nil)
	require.ErrorContains(t, err, "use --redis independent")
}
