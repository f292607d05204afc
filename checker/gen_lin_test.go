package checker

import (
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// TestLinearizabilityAcceptsSimulatedKeys checks the model's soundness: histories of a real key with a
// TTL, with operations applying anywhere in their interval and lost replies, are always accepted.
func TestLinearizabilityAcceptsSimulatedKeys(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		g := genLeaseHistory(rand.New(rand.NewSource(seed)), genConfig{keys: 10, clientsPerKey: 3, instances: 4,
			opsPerKey: 300, ttl: 300 * time.Millisecond, unknownRate: 0.02, wipes: 3})
		r := checkLinearizability(newModel(newIndex(g.h)), DefaultOptions())
		require.Equal(t, Pass, r.Outcome, "seed %d: %s", seed, allText(r))
		require.Contains(t, r.Message, "3030 operations on 10 keys")
		require.Contains(t, r.Message, "3 wipes")
	}
}

// TestLinearizabilityRejectsMutatedKeys flips one clearly refused acquire to a success: the checker must
// find it.
func TestLinearizabilityRejectsMutatedKeys(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		g := genLeaseHistory(rand.New(rand.NewSource(seed)), genConfig{keys: 5, clientsPerKey: 3, instances: 3,
			opsPerKey: 200, ttl: 300 * time.Millisecond})
		require.NotEmpty(t, g.clearRefusals, "seed %d", seed)
		i := g.clearRefusals[rand.New(rand.NewSource(seed)).Intn(len(g.clearRefusals))]
		e := g.h.Events[i]
		op := *e.Op
		op.OK = true
		g.h.Events[i].Op = &op
		r := checkLinearizability(newModel(newIndex(g.h)), DefaultOptions())
		require.Equal(t, Violated, r.Outcome, "seed %d: %s", seed, r.Message)
		require.Len(t, r.Violations, 1)
		require.Equal(t, e.Endpoint, r.Violations[0].Endpoint)
	}
}

// BenchmarkLinearizability100k checks a 100,000-operation history: 100 keys × 1000 operations, three
// contending instances per key, 1% lost replies.
func BenchmarkLinearizability100k(b *testing.B) {
	g := genLeaseHistory(rand.New(rand.NewSource(7)), genConfig{keys: 100, clientsPerKey: 3, instances: 10,
		opsPerKey: 1000, ttl: 300 * time.Millisecond, unknownRate: 0.01})
	idx := newIndex(g.h)
	b.ResetTimer()
	for b.Loop() {
		r := checkLinearizability(newModel(idx), DefaultOptions())
		if r.Outcome != Pass {
			b.Fatalf("%s: %s", r.Outcome, r.Message)
		}
	}
	b.ReportMetric(float64(len(idx.ops)), "ops")
}

// BenchmarkCheck100k runs every invariant over a history of about 100,000 events: 73,000 operations on
// 100 keys and a poll after each successful acquire or renewal.
func BenchmarkCheck100k(b *testing.B) {
	g := genLeaseHistory(rand.New(rand.NewSource(7)), genConfig{keys: 100, clientsPerKey: 3, instances: 10,
		opsPerKey: 730, ttl: 300 * time.Millisecond, unknownRate: 0.01})
	h := g.h
	seq := int64(len(h.Events)) + 1
	for _, e := range g.h.Events {
		if e.Kind == history.KindOp && e.Op.OK && (e.Op.Kind == history.OpAcquire || e.Op.Kind == history.OpRenew) {
			seq++
			h.Events = append(h.Events, history.Event{Seq: seq, Kind: history.KindPoll, At: e.End, End: e.End + time.Millisecond,
				Instance: e.Instance, Endpoint: e.Endpoint, Poll: &history.Poll{Outcome: history.PollOK}})
		}
	}
	history.Sort(h.Events)
	b.ResetTimer()
	for b.Loop() {
		rep := Check(h, DefaultOptions())
		for _, r := range rep.Results {
			if r.Invariant == InvLinearizable && r.Outcome != Pass {
				b.Fatalf("%s: %s", r.Outcome, r.Message)
			}
		}
	}
	b.ReportMetric(float64(len(h.Events)), "events")
}
