package sim_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/lagtest"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

func needRedisServer(t *testing.T) {
	t.Helper()
	if _, ok := redisserver.Available(); !ok {
		if os.Getenv("TENURE_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server not found and TENURE_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server not installed")
	}
}

// requireJudgedOK fails the test unless the checker found every invariant held; a report that violated
// nothing but could not judge a timing verdict because the harness itself ran late (checker's
// inconclusive) makes the test inconclusive, counted, not failed (lagtest).
func requireJudgedOK(t *testing.T, r checker.Report) {
	t.Helper()
	if r.Inconclusive() {
		lagtest.Inconclusive(t, "the run violated nothing, but the harness ran too late to judge: %+v", r.Results)
	}
	require.True(t, r.OK(), "%+v", r.Results)
}

// runCatalogued runs a scenario of the catalogue with the system it is written for, on its own
// topology, and requires every fault to have gone as written.
func runCatalogued(t *testing.T, name string, seed int64) history.History {
	t.Helper()
	sc, err := scenarios.Get(name)
	require.NoError(t, err)
	sysName := sc.System
	if sysName == "" {
		sysName = "reference"
	}
	sys, err := sim.Lookup(sysName)
	require.NoError(t, err)
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: seed, TimeScale: 0.1, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	return res.History
}

// shardKills returns the shard-primary-kill faults in order, and the promotions noted after them.
func shardKills(h history.History) (kills, promotions []*history.Event) {
	for i := range h.Events {
		e := &h.Events[i]
		switch {
		case e.Kind == history.KindFault && e.Fault.Name == "shard-primary-kill":
			kills = append(kills, e)
		case e.Kind == history.KindNote && strings.HasPrefix(e.Note, history.NotePromotion):
			promotions = append(promotions, e)
		}
	}
	return kills, promotions
}

// The Redis election on a Redis Cluster whose election shard loses its primary: the run passes every
// invariant (never two leaders believing or acting, fencing), the promotion is noted, the next leader
// acts under a higher term, and it acts within the bound the scenario declares: the promotion, then one
// TTL of the guard the promoted replica re-arms, with up to a retry interval before the attempt that
// arms it and one after the guard ends, and the client's 250 ms slot-map reload.
func TestClusterElectionPrimaryKill(t *testing.T) {
	t.Parallel()
	needRedisServer(t)
	h := runCatalogued(t, "cluster-election-primary-kill", 1)
	require.Equal(t, "election", h.Meta.Kind)
	require.Equal(t, "cluster", h.Meta.Assumptions.Topology)
	r := checker.Check(h, checker.DefaultOptions())
	requireJudgedOK(t, r)

	kills, promotions := shardKills(h)
	require.Len(t, kills, 1)
	kill := kills[0]
	require.NotEmpty(t, promotions, "the promotion is noted")
	promoted := promotions[0]
	require.Greater(t, promoted.At, kill.At)
	require.True(t, strings.HasPrefix(promoted.Note, history.NotePromotion+kill.Fault.Params["node"]+" -> "), promoted.Note)

	var before uint64
	var next *history.Event
	for i := range h.Events {
		e := &h.Events[i]
		if e.Kind != history.KindPoll {
			continue
		}
		if e.At < kill.At {
			before = max(before, e.Poll.Token)
		} else if next == nil && e.Poll.Token > before && e.Poll.Outcome == history.PollOK {
			next = e
		}
	}
	require.NotZero(t, before, "a leader acted before the kill")
	require.NotNil(t, next, "a leader acts again after the promotion, under a higher term")
	retry := h.Meta.DiscoveryInterval // the elector's RetryInterval in the harness
	bound := (promoted.At - kill.At) + h.Meta.LeaseTTL + 2*retry + 250*time.Millisecond + checker.FailoverTolerance
	t.Logf("kill -> promotion %v, kill -> first action of a new term %v (declared bound %v; the spec's %v)",
		promoted.At-kill.At, next.At-kill.At, bound, checker.SpecFailoverBound(h.Meta.LeaseTTL))
	require.LessOrEqual(t, next.At-kill.At, bound)
}

// A killed primary started again rejoins as the replica of the node promoted in its place, and when
// that node is killed in turn it is promoted back with what it copied: the run passes every invariant,
// fencing tokens included (a rejoined node that had not copied the fencing counters would grant lower
// ones after the second promotion).
func TestClusterPrimaryKillRejoin(t *testing.T) {
	t.Parallel()
	needRedisServer(t)
	h := runCatalogued(t, "cluster-primary-kill-rejoin", 1)
	r := checker.Check(h, checker.DefaultOptions())
	requireJudgedOK(t, r)

	kills, promotions := shardKills(h)
	require.Len(t, kills, 2)
	require.Len(t, promotions, 2, "each kill is followed by a promotion")
	first, second := kills[0].Fault.Params["node"], kills[1].Fault.Params["node"]
	require.Equal(t, history.NotePromotion+first+" -> "+second, promotions[0].Note, "the second kill hits the node promoted by the first")
	require.Equal(t, history.NotePromotion+second+" -> "+first, promotions[1].Note, "the rejoined node takes its shard back")
	var restart *history.Event
	for i := range h.Events {
		if e := &h.Events[i]; e.Kind == history.KindFault && e.Fault.Name == "shard-node-restart" {
			restart = e
		}
	}
	require.NotNil(t, restart)
	require.Equal(t, first+": replica of "+second, restart.Fault.Params["nodes"])
	require.Less(t, promotions[0].At, restart.At)
	require.Less(t, restart.End, kills[1].At, "the node had rejoined before the second kill")
}

// The single-node Redis restart on a cluster kills the primary serving slot 0 and, at the step's end,
// starts it again (the backend's Start, once refused on a cluster): back at once, before the cluster
// noticed, it keeps its slots, empty, and its replica resynchronises from it; either way the step ends
// with the cluster whole, and the reference stays safe.
func TestClusterRedisRestartStartsTheNodeAgain(t *testing.T) {
	t.Parallel()
	needRedisServer(t)
	sc := sim.Scenario{Name: "cluster-restart-short", Instances: 2, Endpoints: 4, Duration: 90 * time.Second, Topology: sim.TopologyCluster,
		Steps:   chaos.Schedule{{At: 30 * time.Second, Fault: chaos.RedisRestart{}, Jitter: -1}},
		Fencing: true, Outside: []string{chaos.RedisRestart{}.Name()}}
	res, err := sim.Run(context.Background(), sim.Options{System: reference.NewReference(), Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors, "the killed node is started again")
	r := checker.Check(res.History, checker.DefaultOptions())
	requireJudgedOK(t, r)
}
