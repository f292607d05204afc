package scenarios_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
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

// Every fault a scenario (or the random nemesis, on any seed) can apply has an entry in the checker's
// bound table: its class is the one written here, so a new fault must be given a derived bound before a
// scenario can use it, and no scenario has a bound of its own (sim.Scenario has no field for one).
func TestEveryFaultHasABoundInTheTable(t *testing.T) {
	want := map[string]checker.FaultClass{
		"crash": checker.ClassGone, "restart": checker.ClassGone, "aborted-start": checker.ClassGone,
		"conn-reset": checker.ClassGone, "stop": checker.ClassHandoff,
		"partition": checker.ClassSilent, "stall": checker.ClassSilent, "pause": checker.ClassSilent,
		"one-way-partition": checker.ClassBlind,
		"outage":            checker.ClassBackendDown, "redis-pause": checker.ClassBackendDown, "redis-restart-aof": checker.ClassBackendDown,
		"redis-restart": checker.ClassWipe, "redis-restart-from-snapshot": checker.ClassWipe,
		"primary-kill": checker.ClassWipe, "primary-isolate": checker.ClassWipe, "sentinel-failover": checker.ClassWipe,
		"shard-primary-kill": checker.ClassWipe, "slot-migration": checker.ClassWipe, "shard-node-restart": checker.ClassWipe,
		"latency": checker.ClassSlow,
		// Nothing a takeover waits for: a start (judged by the scale-change windows), a clock drift
		// (judged by the assumptions), the replicas' own link.
		"start": checker.ClassNone, "clock-drift": checker.ClassNone, "replication-latency": checker.ClassNone,
	}
	held := map[string]bool{"slow-requests": true, "slow-replies": true}
	for _, sc := range scenarios.All() {
		name := sc.System
		if name == "" {
			name = "reference"
		}
		sys, err := sim.Lookup(name)
		require.NoError(t, err)
		for seed := int64(1); seed <= 5; seed++ {
			steps, timing, err := sim.Plan(sim.Options{System: sys, Scenario: sc, Seed: seed, TimeScale: 0.1})
			require.NoError(t, err)
			meta := history.Meta{LeaseTTL: timing.LeaseTTL, Timing: &history.Timing{RenewInterval: timing.RenewInterval,
				OpTimeout: timing.OpTimeout, PollDuration: timing.PollDuration}}
			for _, st := range steps {
				n := st.Fault.Name()
				if strings.HasPrefix(n, "session-") {
					continue // an ordinary operation, not a fault
				}
				f := &history.Fault{Name: n, Params: map[string]string{}}
				switch x := st.Fault.(type) {
				case chaos.SlowRequests:
					f.Params["delay"], f.Params["match"] = x.Delay.String(), x.Match
				case chaos.SlowReplies:
					f.Params["delay"] = x.Delay.String()
				}
				got := checker.Classify(f, meta)
				if held[n] {
					require.NotEqual(t, checker.ClassNone, got, "%s: %s", sc.Name, st)
					continue
				}
				c, ok := want[n]
				require.True(t, ok, "%s: fault %q has no entry in the bound table (checker/bounds.go, docs/bounds.md)", sc.Name, n)
				require.Equal(t, c, got, "%s: %s", sc.Name, st)
			}
		}
	}
}
