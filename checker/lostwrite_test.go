package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// An acquire acknowledged by a primary that is then replaced, followed by another owner's acquire
// while the first should still hold: the checker reports a lost acknowledged write next to the
// promotion. Without a promotion in the history the same violation is only a violation.
func TestLinearizabilityDiagnosesLostWriteAtPromotion(t *testing.T) {
	ttl := time.Second
	acq, ren := history.OpAcquire, history.OpRenew
	lost := func(promote bool) *builder {
		b := linOnly().op("a", acq, key, "a", ttl, ms(100), ms(110), true, "").
			op("a", ren, key, "a", ttl, ms(400), ms(410), true, "")
		if promote {
			b.note(history.NotePromotion+"redis-0 -> redis-1", ms(500))
		}
		return b.op("b", acq, key, "b", ttl, ms(700), ms(710), true, "")
	}

	r := resultOf(t, Check(lost(true).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Contains(t, r.Message, "1 of them show a lost acknowledged write at a promotion")
	require.Len(t, r.Violations, 1)
	v := r.Violations[0]
	require.Contains(t, v.Message, "lost acknowledged write: renew by a")
	require.Contains(t, v.Message, "after the promotion redis-0 -> redis-1 at 500ms")
	require.Contains(t, v.Message, "cannot follow", "the porcupine location stays in the message")
	require.ElementsMatch(t, []string{"a", "b"}, v.Instances)

	r = resultOf(t, Check(lost(false).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.NotContains(t, r.Violations[0].Message, "lost acknowledged write")

	// A write that expired before the contradicting operation is not lost: the key is legitimately free.
	late := linOnly().op("a", acq, key, "a", ttl, ms(100), ms(110), true, "").
		note(history.NotePromotion+"redis-0 -> redis-1", ms(500)).
		op("b", acq, key, "b", ttl, ms(1200), ms(1210), true, "")
	r = resultOf(t, Check(late.build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Pass, r.Outcome, r.Message)

	// A release the old primary acknowledged, lost: the key is still there for the next acquire.
	rel := linOnly().op("a", acq, key, "a", ttl, ms(100), ms(110), true, "").
		note(history.NotePromotion+"redis-0 -> redis-1", ms(300)).
		op("a", history.OpRelease, key, "a", 0, ms(400), ms(410), true, "").
		op("b", acq, key, "b", ttl, ms(500), ms(510), false, "")
	r = resultOf(t, Check(rel.build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Contains(t, r.Violations[0].Message, "lost acknowledged write: release by a")
}

// The promotion's note can trail the clients: the operation that finds the write gone may have been
// answered by the new primary a few milliseconds before the harness noted the promotion. The write is
// still diagnosed as lost by that promotion; a promotion noted long after is not the cause.
func TestLostWriteDiagnosedWhenThePromotionNoteTrails(t *testing.T) {
	ttl := time.Second
	acq, ren := history.OpAcquire, history.OpRenew
	trailing := func(noteAt time.Duration) *builder {
		return linOnly().op("a", acq, key, "a", ttl, ms(100), ms(110), true, "").
			op("a", ren, key, "a", ttl, ms(400), ms(410), true, "").
			op("b", acq, key, "b", ttl, ms(700), ms(710), true, "").
			note(history.NotePromotion+"redis-0 -> redis-1", noteAt)
	}
	r := resultOf(t, Check(trailing(ms(760)).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Contains(t, r.Violations[0].Message, "lost acknowledged write: renew by a")
	require.Contains(t, r.Violations[0].Message, "after the promotion redis-0 -> redis-1 at 760ms")

	r = resultOf(t, Check(trailing(ms(710)+promotionNoteLag+ms(50)).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.NotContains(t, r.Violations[0].Message, "lost acknowledged write")
}

// A lost acknowledged write is the backend's doing, and caught, only under a fault declared outside the
// assumptions that was under way when it was found (its window and a TTL after): declared but long over,
// or not declared at all, it is a violation of the system's run like any other non-linearizable key.
func TestLostWriteIsCaughtOnlyUnderADeclaredFault(t *testing.T) {
	ttl := time.Second
	acq, ren := history.OpAcquire, history.OpRenew
	lost := func(faultAt time.Duration, declare bool) *builder {
		b := linOnly()
		if declare {
			b.assume(0.01, "primary-kill")
		}
		at := func(d time.Duration) time.Duration { return 3*ttl + d }
		return b.faultP("f1", "primary-kill", faultAt, faultAt, map[string]string{}).
			op("a", acq, key, "a", ttl, at(ms(100)), at(ms(110)), true, "").
			op("a", ren, key, "a", ttl, at(ms(400)), at(ms(410)), true, "").
			note(history.NotePromotion+"redis-0 -> redis-1", at(ms(500))).
			op("b", acq, key, "b", ttl, at(ms(700)), at(ms(710)), true, "")
	}
	r := resultOf(t, Check(lost(3*ttl+ms(450), true).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Caught, r.Outcome, r.Message)
	require.Len(t, r.Caught, 1)
	require.Equal(t, []string{"f1 primary-kill"}, r.Caught[0].Outside)

	r = resultOf(t, Check(lost(3*ttl+ms(450), false).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, "not declared: %s", r.Message)

	r = resultOf(t, Check(lost(ms(100), true).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, "declared, but over more than a TTL before: %s", r.Message)
}
