package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// GAP (false alarm, found by the seed explorer in virtual time: explore-election-redis seed 159543870).
// A takeover owed while the backend is frozen cannot happen before it resumes: nothing is granted while
// Redis is paused, and an acquire sent then lands at the resume. The model owed the endpoint at the
// moment the old value expired, inside the pause, and judged the standby's takeover at the resume
// 2.4 s late. The premise is the freeze itself, read off the history: the backend answered nothing
// sent inside its window before the resume. A pause whose window the history contradicts (a call
// sent well inside it and answered well before its end) defers nothing.
//
// rtCrash: a crashes at 5.5 s; e1 is owed at 8.022 s, deadline 8.123 s. Redis is paused over
// [7.5 s, 9 s]: every call sent in it is answered at 9 s. b acquires e1 at 9 s (its acquire, sent at
// once, answered at 9.002 s) and polls from 9.005 s: on time, the resume being the earliest grant.
func TestATakeoverOwedInsideABackendFreezeIsOwedAtTheResume(t *testing.T) {
	s := time.Second
	from, to := 7*s+ms(500), 9*s
	build := func(take time.Duration, queued bool) *builder {
		b := rtCrash().fault("f2", "redis-pause", from, to, false, false)
		if queued {
			for i := range b.events {
				e := &b.events[i]
				if e.Kind == history.KindOp && e.At >= from && e.At < to && e.End != history.Infinity {
					e.End = to
				}
			}
		}
		return b.rtTake("b", take).rtToken("b", "e1", 2)
	}
	rtDump(t, build(to+ms(5), true), "e1")
	o, msg := rtOutcome(t, rtCheck(build(to+ms(5), true)), InvFailover)
	require.Equal(t, Pass, o, msg)
	// Past the resume by more than the tolerance: late all the same.
	o, msg = rtOutcome(t, rtCheck(build(to+ms(400), true)), InvFailover)
	require.Equal(t, Violated, o, msg)
	// The premise fails: the backend answered b's calls within 2 ms all through the "pause". Nothing
	// shows it was frozen when e1 was owed, and the takeover at 9 s is late.
	o, msg = rtOutcome(t, rtCheck(build(to+ms(5), false)), InvFailover)
	require.Equal(t, Violated, o, msg)
}
