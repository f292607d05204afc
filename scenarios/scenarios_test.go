package scenarios_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
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
		if (sc.Topology == "" && sc.Explore == nil) || n == "sentinel-primary-kill" || n == "cluster-primary-kill" {
			want = append(want, n)
		}
	}
	require.Equal(t, want, ci.Scenarios, "ci runs every single-node scenario but the composing nemesis's, one Sentinel and one cluster scenario")
	ex, err := scenarios.GetSuite("explore")
	require.NoError(t, err)
	require.Equal(t, []string{"explore", "explore-election-redis"}, ex.Scenarios)
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
	require.ErrorContains(t, err, "valid suites: ci, cluster, explore, full, quick, sentinel, soak")
	_, err = scenarios.Get("nope")
	require.ErrorContains(t, err, "valid scenarios: single-instance")
}

// Every fault a scenario (or the random nemesis, on any seed) can apply has an effect in the checker's
// model (checker.EffectOf): the effect written here, so a new fault must be given one — what it does to an
// instance or to the backend, from which the model derives every deadline — before a scenario can use it.
// No scenario has a bound of its own (sim.Scenario has no field for one).
func TestEveryFaultHasAnEffectInTheModel(t *testing.T) {
	want := map[string]checker.Effect{
		"crash": checker.EffectGone, "restart": checker.EffectGone, "aborted-start": checker.EffectGone,
		"conn-reset": checker.EffectBlind, "stop": checker.EffectStopped,
		"partition": checker.EffectCutOff, "outage": checker.EffectCutOff, "stall": checker.EffectStalled,
		"pause": checker.EffectPaused, "wire-pause": checker.EffectPaused, "one-way-partition": checker.EffectBlind,
		"redis-pause": checker.EffectBackendDown, "redis-restart-aof": checker.EffectBackendDown,
		"redis-restart": checker.EffectDataLoss, "redis-restart-from-snapshot": checker.EffectDataLoss,
		"primary-kill": checker.EffectDataLoss, "primary-isolate": checker.EffectDataLoss, "sentinel-failover": checker.EffectDataLoss,
		"shard-primary-kill": checker.EffectDataLoss, "slot-migration": checker.EffectDataLoss, "shard-node-restart": checker.EffectDataLoss,
		"latency": checker.EffectSlowed, "slow-requests": checker.EffectSlowed, "slow-replies": checker.EffectSlowed,
		// Nothing a takeover waits for: a start (its newcomer needs a detection latency, as any
		// instance does), a clock drift (judged by the assumptions), the replicas' own link.
		"start": checker.EffectNone, "clock-drift": checker.EffectNone, "replication-latency": checker.EffectNone,
	}
	for _, sc := range scenarios.All() {
		name := sc.System
		if name == "" {
			name = "reference"
		}
		sys, err := sim.Lookup(name)
		require.NoError(t, err)
		for seed := int64(1); seed <= 5; seed++ {
			steps, _, err := sim.Plan(sim.Options{System: sys, Scenario: sc, Seed: seed, TimeScale: 0.1})
			require.NoError(t, err)
			for _, st := range steps {
				n := st.Fault.Name()
				if strings.HasPrefix(n, "session-") {
					continue // an ordinary operation, not a fault
				}
				got := checker.EffectOf(&history.Fault{Name: n})
				c, ok := want[n]
				require.True(t, ok, "%s: fault %q has no effect in the model (checker/effects.go, docs/checker.md)", sc.Name, n)
				require.Equal(t, c, got, "%s: %s", sc.Name, st)
			}
		}
	}
}
