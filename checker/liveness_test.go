package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// Paused and removed sessions stop being polled within the grace a system needs to see it (its
// detection latency, a poll it had decided, the tolerance: 2.401 s here); a session added or resumed is
// owed its first poll like a takeover, once a system can have learnt of it.
func TestSessions(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		msg     string
	}{
		{"paused session not polled", pair(20*s).session("e1", history.SessionPaused, 5*s+ms(500)).
			with(func(*history.Meta) {}), Pass, "1 pause or removal judged"},
		{"paused session polled within the grace", pair(20 * s), Pass, ""},
		{"paused session polled past the grace", pair(20*s).session("e1", history.SessionPaused, 5*s+ms(500)),
			Violated, "e1 was paused at 5.5s but a polled it at 8.015s"},
		{"removed session polled", pair(20*s).session("e1", history.SessionRemoved, 5*s+ms(500)),
			Violated, "e1 was removed"},
		{"added session never polled", pair(20*s).session("e3", history.SessionAdded, 5*s),
			Violated, "e3 was not polled after 5s"},
		{"added session polled once a system can know of it", pair(20*s).session("e3", history.SessionAdded, 5*s).
			hold("b", "e3", 6*s+ms(300), 20*s), Pass, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			if tc.name == "paused session not polled" || tc.name == "paused session polled within the grace" {
				b.events = dropPolls(b.events, "a", "e1", 7*s+ms(900), 20*s)
				if tc.name == "paused session polled within the grace" {
					b.session("e1", history.SessionPaused, 5*s+ms(700))
				}
			}
			r := resultOf(t, Check(b.build(), DefaultOptions()), InvLiveness)
			require.Equal(t, tc.outcome, r.Outcome, allText(r))
			require.Contains(t, allText(r), tc.msg)
		})
	}
}

// A fault on some of a Redis Cluster's slots acts on the endpoints whose keys live there: their grants
// wait for the promotion's guard, while an endpoint on another shard keeps its cadence.
func TestAShardFaultActsOnItsSlots(t *testing.T) {
	s := time.Second
	base := func() *builder {
		b := newBuilder().with(func(m *history.Meta) { m.Assumptions.Topology = "cluster" }).
			life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("a", "ep-0", ms(10), 6*s).poll("a", "ep-0", 6*s+ms(15), 6*s+ms(115), 1).hold("b", "ep-2", ms(10), 20*s).
			faultP("f1", "shard-primary-kill", 6*s, 6*s, map[string]string{ShardSlotsParam: "10923-16383"}).
			note(history.NotePromotion+"redis-2 -> redis-5", 7*s)
		return b
	}
	require.True(t, inSlots([]slotRange{{10923, 16383}}, HashSlot("poll:lease:ep-0")), "ep-0's key lies on the killed shard")
	require.False(t, inSlots([]slotRange{{10923, 16383}}, HashSlot("poll:lease:ep-2")), "ep-2's does not")
	// ep-0's holder's renewal at 6.01 s fails; nothing is granted there until 7 s + 1.3 s + 3 s.
	b := base().lost("a", history.OpRenew, "ep-0", "a:10", 6*s+ms(10)).hold("b", "ep-0", 11*s+ms(350), 20*s)
	_, l, _ := judge(t, b)
	require.Equal(t, Pass, l.Outcome, allText(l))
	b = base().lost("a", history.OpRenew, "ep-0", "a:10", 6*s+ms(10)).hold("b", "ep-0", 11*s+ms(500), 20*s)
	_, l, _ = judge(t, b)
	require.Equal(t, Violated, l.Outcome, allText(l))
	// ep-2's holder stops polling at the kill: it owes its cadence, the kill touched none of its keys.
	b = base().lost("a", history.OpRenew, "ep-0", "a:10", 6*s+ms(10)).hold("b", "ep-0", 11*s+ms(350), 20*s)
	b.events = dropPolls(b.events, "b", "ep-2", 6*s, 9*s)
	_, l, _ = judge(t, b)
	require.Equal(t, Violated, l.Outcome, allText(l))
	require.Contains(t, allText(l), "ep-2")
}

// A history recorded before the header carried the run's timing gives the model nothing to derive
// deadlines from: failover and liveness's starvation are not judged, and say so.
func TestAnOlderHistoryWithoutTimingIsNotJudgedForTiming(t *testing.T) {
	s := time.Second
	rep := Check(pair(20*s).untimed().build(), DefaultOptions())
	f := resultOf(t, rep, InvFailover)
	require.Equal(t, Skipped, f.Outcome)
	require.Contains(t, f.Message, "re-record it")
	require.Contains(t, resultOf(t, rep, InvLiveness).Message, "no timing recorded")
}
