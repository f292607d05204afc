package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestHashSlot(t *testing.T) {
	// Values CLUSTER KEYSLOT gives.
	for key, want := range map[string]int{
		"foo": 12182, "somekey": 11058, "{user1000}.following": 3443, "poll:lease:{ep-0}": 15222,
		"foo{}{bar}": 8363, // an empty tag: the whole key is hashed
	} {
		require.Equal(t, want, HashSlot(key), key)
	}
}

// shardBase is a cluster run: a holds ep-0 (slot 15222, on the shard 10923-16383) and ep-3 (slot
// 2837), b holds ep-2 (slot 6964), each polled every 500 ms until the fault at 6 s; the primary
// serving 10923-16383 is killed at 6 s. TTL 3 s, so the specification's bound is 3.1 s; the scenario's
// own is 5 s.
func shardBase(outside bool) *builder {
	b := newBuilder().with(func(m *history.Meta) { m.Endpoints = 3; m.PollInterval = ms(500) })
	if outside {
		b.assume(0.01, "shard-primary-kill")
	}
	b.life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0)
	for _, x := range []struct{ inst, ep string }{{"a", "ep-0"}, {"a", "ep-3"}, {"b", "ep-2"}} {
		b.add(history.Event{Kind: history.KindOp, At: ms(10), End: ms(12), Instance: x.inst, Endpoint: x.ep,
			Op: &history.Op{Kind: history.OpAcquire, Key: "poll:lease:{" + x.ep + "}", Owner: x.inst, TTL: 3 * time.Second, OK: true}})
		b.polls(x.inst, x.ep, ms(20), 6*time.Second, ms(500), 1)
	}
	return b.faultP("f1", "shard-primary-kill", 6*time.Second, 6*time.Second,
		map[string]string{"node": "redis-2", "of": "ep-0", "slot": "15222", ShardSlotsParam: "10923-16383"})
}

func TestShardGaps(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		msgs    []string // in the result's text
		not     []string // not in it
	}{
		{
			name: "healthy shards keep their cadence; the killed one waits (outside)",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).polls("b", "ep-2", 6*s, 20*s, ms(500), 1).
				polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Pass,
			msgs:    []string{"1 shard fault: 2 endpoints on untouched slots", "1 on touched slots not judged"},
		},
		{
			// The defect: the holder's lease lapsed with its renewal, and it took the endpoint back.
			name: "the holder of an endpoint of a healthy shard stalls",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
				polls("b", "ep-2", 8*s+ms(500), 20*s, ms(500), 2).polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Violated,
			msgs: []string{"f1 shard-primary-kill (node redis-2, slots 10923-16383): ep-2 (slot 6964, on a shard the fault did not touch) " +
				"was not polled by its holder b for 2.88s after a poll (from its end at 5.62s to 8.5s), over its cadence bound 601ms"},
			not: []string{"ep-0", "ep-3 ("},
		},
		{
			// A system with a slower pace of its own (a baseline that polls twice per lock, then waits
			// 2 s): it keeps that pace across the fault, so the fault is not blamed for it.
			name: "an endpoint keeps the slower pace it had before the fault",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).polls("b", "ep-0", 14*s, 20*s, ms(500), 2).
				drop(func(e history.Event) bool { return e.Kind == history.KindPoll && e.Endpoint == "ep-2" }).
				polls("b", "ep-2", ms(20), 20*s, ms(2500), 1),
			outcome: Pass,
		},
		{
			// The same pace, then a stall twice as long after the fault: over the pace, caught.
			name: "an endpoint that falls behind its own slower pace fails",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).polls("b", "ep-0", 14*s, 20*s, ms(500), 2).
				drop(func(e history.Event) bool { return e.Kind == history.KindPoll && e.Endpoint == "ep-2" }).
				polls("b", "ep-2", ms(20), 6*s, ms(2500), 1).polls("b", "ep-2", 10*s, 20*s, ms(2500), 1),
			outcome: Violated,
			msgs:    []string{"ep-2 (slot 6964, on a shard the fault did not touch) was not polled by its holder b for 4.88s", "over its cadence bound 3s"},
		},
		{
			name: "a holder late by less than the tolerance passes",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
				polls("b", "ep-2", 6*s+ms(170), 20*s, ms(500), 1).polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Pass,
		},
		{
			name: "a holder late by more than the tolerance fails",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
				polls("b", "ep-2", 6*s+ms(230), 20*s, ms(500), 1).polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Violated,
			msgs:    []string{"ep-2 (slot 6964, on a shard the fault did not touch) was not polled by its holder b for 610ms"},
		},
		{
			name: "a handoff within the TTL passes",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
				polls("a", "ep-2", 8*s+ms(500), 20*s, ms(500), 2).polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Pass,
		},
		{
			name: "a handoff past the TTL fails",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
				polls("a", "ep-2", 9*s+ms(200), 20*s, ms(500), 2).polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Violated,
			msgs:    []string{"ep-2 (slot 6964, on a shard the fault did not touch) was not polled for 3.68s (from 5.52s to 9.2s), handed over from b to a, over the bound 3.101s"},
		},
		{
			name: "never polled again",
			b: shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
				polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Violated,
			msgs:    []string{"ep-2 (slot 6964, on a shard the fault did not touch) was not polled for 14.48s (from 5.52s to 20s), over the bound 3.101s"},
		},
		{
			name: "inside the assumptions the touched shard gets the scenario's bound",
			b: shardBase(false).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).polls("b", "ep-2", 6*s, 20*s, ms(500), 1).
				polls("b", "ep-0", 14*s, 20*s, ms(500), 2),
			outcome: Violated,
			msgs:    []string{"ep-0 (slot 15222, on a slot the fault touched) was not polled for 8.48s (from 5.52s to 14s), handed over from a to b, over the bound 5s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resultOf(t, Check(tt.b.build(), Options{}), InvFailover)
			text := allText(r)
			require.Equal(t, tt.outcome, r.Outcome, text)
			for _, m := range tt.msgs {
				require.Contains(t, text, m)
			}
			for _, m := range tt.not {
				require.NotContains(t, text, m)
			}
		})
	}
}

// Another fault close to the shard fault may explain a stall anywhere: the shard judgment stands aside.
func TestShardGapsStandAsideForOtherFaults(t *testing.T) {
	b := shardBase(true).polls("a", "ep-3", 6*time.Second, 20*time.Second, ms(500), 1).
		polls("b", "ep-2", 8*time.Second+ms(500), 20*time.Second, ms(500), 2).
		fault("f2", "latency", 7*time.Second, 8*time.Second, false, false, "b")
	r := resultOf(t, Check(b.build(), Options{}), InvFailover)
	require.Equal(t, Skipped, r.Outcome, allText(r)) // the shard fault judged nothing, and nothing else happened
	require.Contains(t, allText(r), "1 shard faults not judged by shard (another fault overlapped them)")
}

// A history without the slots parameter (recorded before shard faults named them) is not judged this
// way: the killed shard's extent is unknown.
func TestShardGapsNeedSlots(t *testing.T) {
	b := shardBase(true).polls("a", "ep-3", 6*time.Second, 20*time.Second, ms(500), 1)
	h := b.build()
	for i := range h.Events {
		if f := h.Events[i].Fault; f != nil {
			delete(f.Params, ShardSlotsParam)
		}
	}
	r := resultOf(t, Check(h, Options{}), InvFailover)
	require.Equal(t, Skipped, r.Outcome, allText(r)) // the shard fault judged nothing, and nothing else happened
	require.NotContains(t, allText(r), "shard faults")
}

func TestParseSlots(t *testing.T) {
	rs, err := parseSlots("0-5460, 10923-16383,7000")
	require.NoError(t, err)
	require.Equal(t, []slotRange{{0, 5460}, {10923, 16383}, {7000, 7000}}, rs)
	for _, bad := range []string{"x", "5-1", "0-16384", "-1"} {
		_, err := parseSlots(bad)
		require.Error(t, err, bad)
	}
}

// drop removes the events match selects (the others keep their seqs).
func (b *builder) drop(match func(history.Event) bool) *builder {
	kept := b.events[:0]
	for _, e := range b.events {
		if !match(e) {
			kept = append(kept, e)
		}
	}
	b.events = kept
	return b
}

// The blind spots of the shard cadence rule, closed: one early handoff is no pace of its own, a gap
// already over its bound when the fault began still counts, and a fault elsewhere that hindered nothing
// (a clock drift within the bound on another instance) does not switch the judgement off.
func TestShardCadenceBlindSpots(t *testing.T) {
	s := time.Second
	tabledShard := func() *builder {
		b := shardBase(true)
		b.meta.FailoverBound = SpecFailoverBound(b.meta.LeaseTTL)
		b.meta.Timing = &history.Timing{RenewInterval: s, OpTimeout: ms(300), PollDuration: ms(100)}
		return b.polls("a", "ep-3", 6*s, 20*s, ms(500), 1).polls("b", "ep-0", 14*s, 20*s, ms(500), 2)
	}
	tests := []struct {
		name string
		b    *builder
		msg  string
	}{
		{
			// ep-2 was handed from a to b early on (a 2.5 s gap, within the TTL), then b kept 500 ms; b
			// stalls 2 s across the fault: the handoff does not lift the cadence bound to 3 s.
			name: "one early handoff is not a pace",
			b: tabledShard().drop(func(e history.Event) bool { return e.Kind == history.KindPoll && e.Endpoint == "ep-2" }).
				polls("a", "ep-2", ms(20), s, ms(500), 1).polls("b", "ep-2", 3*s+ms(500), 5*s+ms(600), ms(500), 2).
				polls("b", "ep-2", 7*s+ms(500), 20*s, ms(500), 2),
			msg: "ep-2 (slot 6964, on a shard the fault did not touch) was not polled by its holder b for 1.9s",
		},
		{
			// b's last poll before the fault began at 4.02 s; the gap was over its cadence bound when
			// the fault came at 6 s, and it goes on to 7 s.
			name: "a gap already over its bound when the fault began",
			b: tabledShard().drop(func(e history.Event) bool { return e.Kind == history.KindPoll && e.Endpoint == "ep-2" && e.At > 4*s }).
				polls("b", "ep-2", 7*s, 20*s, ms(500), 1),
			msg: "ep-2 (slot 6964, on a shard the fault did not touch) was not polled by its holder b for 3.38s",
		},
		{
			name: "an in-bound clock drift elsewhere does not switch the judgement off",
			b: tabledShard().fault("f2", "clock-drift", 5*s, 15*s, false, false, "a").
				polls("b", "ep-2", 8*s+ms(500), 20*s, ms(500), 2),
			msg: "was not polled by its holder b for 2.88s after a poll",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := resultOf(t, Check(tt.b.build(), Options{}), InvFailover)
			require.Equal(t, Violated, r.Outcome, allText(r))
			require.Contains(t, allText(r), tt.msg)
		})
	}
}
