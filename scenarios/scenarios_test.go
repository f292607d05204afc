package scenarios_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	_ "github.com/tenurelabs/tenure/systems/reference" // the systems scenarios are written for
)

// Every scenario in the catalogue must plan cleanly at the ci time scale with its own system.
func TestEveryScenarioPlans(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range scenarios.All() {
		t.Run(sc.Name, func(t *testing.T) {
			require.False(t, seen[sc.Name], "duplicate scenario name")
			seen[sc.Name] = true
			require.NotEmpty(t, sc.Description)
			name := sc.System
			if name == "" {
				name = "reference"
			}
			sys, err := sim.Lookup(name)
			require.NoError(t, err)
			steps, timing, err := sim.Plan(sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 0.1})
			require.NoError(t, err)
			require.Positive(t, timing.LeaseTTL)
			for _, st := range steps {
				require.LessOrEqual(t, st.At+st.For, sc.Duration/10)
			}
		})
	}
}

func TestSuites(t *testing.T) {
	ci, err := scenarios.GetSuite("ci")
	require.NoError(t, err)
	// ci runs every scenario but the Sentinel and cluster ones, of which it runs one each: each starts
	// six processes.
	var want []string
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Get(n)
		require.NoError(t, err)
		if sc.Topology == "" || n == "sentinel-primary-kill" || n == "cluster-primary-kill" {
			want = append(want, n)
		}
	}
	require.Equal(t, want, ci.Scenarios, "ci runs every single-node scenario, one Sentinel and one cluster scenario")
	sen, err := scenarios.GetSuite("sentinel")
	require.NoError(t, err)
	require.Equal(t, []string{"sentinel-primary-kill", "sentinel-primary-isolated", "sentinel-replication-lag", "sentinel-manual-failover",
		"election-sentinel-primary-kill-redis", "election-sentinel-primary-isolated-redis"}, sen.Scenarios)
	cl, err := scenarios.GetSuite("cluster")
	require.NoError(t, err)
	require.Equal(t, []string{"cluster-primary-kill", "cluster-slot-migration", "cluster-election-primary-kill", "cluster-primary-kill-rejoin"},
		cl.Scenarios)
	el, err := scenarios.Get("cluster-election-primary-kill")
	require.NoError(t, err)
	require.Equal(t, "election-redis", el.System, "the cluster election scenario runs the Redis election")
	require.Contains(t, ci.Scenarios, "election-conn-reset-pg")
	for _, su := range scenarios.Suites() {
		require.NotEmpty(t, su.Scenarios, su.Name)
		for _, n := range su.Scenarios {
			_, err := scenarios.Get(n)
			require.NoError(t, err, "suite %s names %s", su.Name, n)
		}
	}
	_, err = scenarios.GetSuite("nope")
	require.ErrorContains(t, err, "valid suites: ci, cluster, full, quick, sentinel, soak")
	_, err = scenarios.Get("nope")
	require.ErrorContains(t, err, "valid scenarios: single-instance")
}
