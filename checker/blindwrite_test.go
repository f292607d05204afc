package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// blindBase is a lease history with the bound table's timing (call bound 300 ms) in which a holds e1 and
// its renewal sent at 1 s gets no reply.
func blindBase() *builder {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, ms(10), ms(11), true, "").
		polls("a", "e1", ms(20), 3*s, s, 1).polls("b", "e2", ms(20), 20*s, s, 1).
		unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, s)
	return b
}

// An instance whose call went unanswered past its call bound, and that has had no reply since, must not
// send an acquire or renewal (one more call bound and the tolerance are allowed for a write decided
// before it learned). One that does, and gets no reply either, is reported; a reply to anything it sent
// after the lost call, an answered write, a cancelled call, or a stall of the instance excuse it.
func TestBlindWrites(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		more func(b *builder) *builder
		ok   bool
	}{
		{"a renewal a renewal interval after the lost one, unanswered", func(b *builder) *builder {
			return b.unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, false},
		{"an acquire of another endpoint, unanswered", func(b *builder) *builder {
			return b.unknownOp("a", history.OpAcquire, "poll:lease:e3", "a", 3*s, 2*s)
		}, false},
		{"within a call bound and the tolerance of learning", func(b *builder) *builder {
			return b.unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, s+ms(650))
		}, true},
		{"after a reply to something sent since", func(b *builder) *builder {
			return b.op("a", history.OpOther, "poll:hb:a", "", 0, s+ms(800), s+ms(801), true, "").
				unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, true},
		{"a reply to something sent before the lost call does not count", func(b *builder) *builder {
			return b.op("a", history.OpOther, "poll:hb:a", "", 0, s-ms(5), s+ms(200), true, "").
				unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, false},
		{"a write that was answered", func(b *builder) *builder {
			return b.op("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s, 2*s+ms(1), true, "")
		}, true},
		{"a heartbeat", func(b *builder) *builder {
			b.unknownOp("a", history.OpOther, "poll:node:a", "", 0, 2*s)
			b.events[len(b.events)-1].Op.Command = "set poll:node:a 1 ex 3"
			return b
		}, false},
		{"a read", func(b *builder) *builder {
			b.unknownOp("a", history.OpOther, "poll:nodes", "", 0, 2*s)
			b.events[len(b.events)-1].Op.Command = "zrange poll:nodes 0 -1"
			return b
		}, true},
		{"before the lost call's caller got its failure (a longer deadline of its own)", func(b *builder) *builder {
			b.events[len(b.events)-1].Op.GaveUp = s + ms(900)
			return b.unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, true},
		{"a call bound and the tolerance after its caller got its failure", func(b *builder) *builder {
			b.events[len(b.events)-1].Op.GaveUp = s + ms(900)
			return b.unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s+ms(500))
		}, false},
		{"a release", func(b *builder) *builder {
			return b.unknownOp("a", history.OpRelease, "poll:lease:e1", "a", 0, 2*s)
		}, true},
		{"while its replies are slowed within the call bound, with a probe answered since", func(b *builder) *builder {
			return b.fault("f1", "slow-replies", s-ms(100), 3*s, false, false, "a").withParams("delay", "200ms").
				op("a", history.OpOther, "", "", 0, s+ms(700), s+ms(900), true, "").
				unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, true},
		{"while its replies are slowed within the call bound, with no answer since: a slow link excuses nothing the history does not show", func(b *builder) *builder {
			return b.fault("f1", "slow-replies", s-ms(100), 3*s, false, false, "a").withParams("delay", "200ms").
				unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, false},
		{"while its replies are held past the call bound", func(b *builder) *builder {
			return b.fault("f1", "slow-replies", s-ms(100), 3*s, false, false, "a").withParams("delay", "2s").
				unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, false},
		{"while the instance is stalled", func(b *builder) *builder {
			return b.fault("f1", "stall", s-ms(100), 3*s, false, false, "a").
				unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resultOf(t, Check(tc.more(blindBase()).build(), DefaultOptions()), InvBlindWrite)
			if tc.ok {
				require.Equal(t, Pass, r.Outcome, allText(r))
				return
			}
			require.Equal(t, Violated, r.Outcome, allText(r))
			require.Contains(t, allText(r), "went unanswered past its call bound")
		})
	}
	// A call its own caller cancelled says nothing about the link.
	b := blindBase()
	b.events[len(b.events)-1].Op.Err = "context canceled"
	r := resultOf(t, Check(b.unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s).build(), DefaultOptions()), InvBlindWrite)
	require.Equal(t, Pass, r.Outcome, allText(r))
}

// A history written before give-up times and probe answers were recorded (schema 2, 3) has no
// blind-write verdict: the moment its instances learned of a lost call cannot be told, nor whether a
// probe told them their link was back.
func TestBlindWritesSkipAnOlderHistory(t *testing.T) {
	s := time.Second
	b := blindBase().unknownOp("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 2*s)
	b.meta.Schema = 2
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvBlindWrite)
	require.Equal(t, Skipped, r.Outcome, allText(r))
	require.Contains(t, r.Message, "schema 2")
}
