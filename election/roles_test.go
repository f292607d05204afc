package election

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/promtest"
)

// metricValue returns the value of the named metric for role on reg (0 when absent).
func metricValue(t *testing.T, reg *prometheus.Registry, name, role string) float64 {
	t.Helper()
	return promtest.Value(t, reg, name, promtest.Label("role", role))
}

func TestSeveralRolesPerProcessWithMetrics(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	roles := []string{uniqueRole(t), uniqueRole(t)}
	// Two processes, each running one elector per role on one backend and one registry.
	type process struct {
		reg *prometheus.Registry
		es  []*Elector
	}
	var procs []process
	var all []*Elector
	for p := range 2 {
		reg := prometheus.NewRegistry()
		b := NewRedisBackend(env.c, RedisOptions{Heartbeat: true})
		pr := process{reg: reg}
		for i, role := range roles {
			cfg := testConfig(t, role, fmt.Sprintf("p%d", p), uint64(10*p+i))
			cfg.Registerer = reg
			e, err := New(b, cfg)
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background()))
			pr.es = append(pr.es, e)
			all = append(all, e)
		}
		procs = append(procs, pr)
	}
	t.Cleanup(func() { stopAll(t, all) })

	for i, role := range roles {
		require.Eventually(t, func() bool {
			return len(leaders([]*Elector{procs[0].es[i], procs[1].es[i]})) == 1
		}, testTTL+3*time.Second, 5*time.Millisecond, "one leader for %s", role)
	}
	for i, role := range roles {
		var isLeader, elections float64
		for _, pr := range procs {
			v := metricValue(t, pr.reg, "tenure_election_is_leader", role)
			require.Equal(t, v == 1, pr.es[i].IsLeader(), "is_leader matches IsLeader")
			isLeader += v
			elections += metricValue(t, pr.reg, "tenure_election_elections_total", role)
		}
		require.Equal(t, 1.0, isLeader, role)
		require.Equal(t, 1.0, elections, role)
	}

	// Stopping the leader of the first role hands it over without touching the second role.
	leader := leaders([]*Elector{procs[0].es[0], procs[1].es[0]})[0]
	other := procs[0].es[0]
	otherReg := procs[0].reg
	if other == leader {
		other, otherReg = procs[1].es[0], procs[1].reg
	}
	second := leaders([]*Elector{procs[0].es[1], procs[1].es[1]})[0]
	secondTerm := second.Term()
	require.Eventually(t, func() bool { return other.Leader() == leader.ID() }, 3*testRetry, 5*time.Millisecond)
	require.NoError(t, leader.Stop(context.Background()))
	require.Eventually(t, other.IsLeader, testTTL, 5*time.Millisecond)
	require.Equal(t, 1.0, metricValue(t, otherReg, "tenure_election_failovers_total", roles[0]))
	require.True(t, second.IsLeader())
	require.Equal(t, secondTerm, second.Term())

	info, err := NewRedisBackend(env.c, RedisOptions{}).Leader(context.Background(), roles[0])
	require.NoError(t, err)
	require.Equal(t, other.ID(), info.ID)
	require.False(t, info.Heartbeat.IsZero(), "heartbeat hash written")
}
