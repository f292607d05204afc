package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// notReplicated marks the last operation added as a write WAIT did not confirm.
func (b *builder) notReplicated() *builder {
	b.events[len(b.events)-1].Op.NotReplicated = true
	return b
}

// A grant the primary answered but WAIT did not confirm, then a promotion that discards it, then
// another owner's grant inside the first one's TTL: with the write acknowledged this is a lost
// acknowledged write; marked NotReplicated it is an indeterminate write the caller never relied on,
// and the key is linearizable (the grant never took effect on the surviving copy).
func TestLinearizabilityNotReplicatedWriteIsNotAcknowledged(t *testing.T) {
	ttl := time.Second
	acq, ren := history.OpAcquire, history.OpRenew
	hist := func(mark bool) history.History {
		b := linOnly().op("a", acq, key, "a", ttl, ms(100), ms(110), true, "")
		if mark {
			b.notReplicated()
		}
		b.op("a", ren, key, "a", ttl, ms(400), ms(410), true, "")
		if mark {
			b.notReplicated()
		}
		return b.note(history.NotePromotion+"redis-0 -> redis-1", ms(500)).
			op("b", acq, key, "b", ttl, ms(700), ms(710), true, "").build()
	}

	r := resultOf(t, Check(hist(false), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Contains(t, r.Violations[0].Message, "lost acknowledged write: renew by a")

	r = resultOf(t, Check(hist(true), DefaultOptions()), InvLinearizable)
	require.Equal(t, Pass, r.Outcome, r.Message)
	require.Contains(t, r.Message, "2 writes WAIT did not confirm taken as indeterminate")

	// Only the renewal unconfirmed: the acknowledged grant still holds at 700 ms (TTL 1 s), so the
	// contradiction stays, and the diagnosis names the grant, never the unconfirmed renewal.
	b := linOnly().op("a", acq, key, "a", ttl, ms(100), ms(110), true, "").
		op("a", ren, key, "a", ttl, ms(400), ms(410), true, "").notReplicated().
		note(history.NotePromotion+"redis-0 -> redis-1", ms(500)).
		op("b", acq, key, "b", ttl, ms(700), ms(710), true, "")
	r = resultOf(t, Check(b.build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Contains(t, r.Violations[0].Message, "lost acknowledged write: acquire by a")
}

// Indeterminate is not timeless: a write WAIT did not confirm applied within its own interval or never,
// so a read that saw the key absent after that interval, followed by a read that sees the write's owner,
// is still no history of a single key.
func TestLinearizabilityNotReplicatedWriteKeepsItsInterval(t *testing.T) {
	ttl := time.Second
	b := linOnly().op("a", history.OpAcquire, key, "a", ttl, ms(100), ms(110), true, "").notReplicated().
		op("b", history.OpRead, key, "", 0, ms(200), ms(210), true, "").
		op("b", history.OpRead, key, "", 0, ms(300), ms(310), true, "a")
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Contains(t, r.Violations[0].Message, "read() -> a")

	// The model's description says what the write was.
	require.Equal(t, "acquire(a, 1s) -> ok, not confirmed by WAIT (indeterminate)",
		describeLeaseOp(leaseInput{kind: history.OpAcquire, owner: "a", ttl: ttl}, leaseOutput{unknown: true, ok: true, notReplicated: true}))
}
