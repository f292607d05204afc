package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// A system that says it looks for free endpoints on a tick has a late failover within that tick named
// as its likely cause, with the bound its own intervals imply; the specification's bound still decides.
// rtCrash: a crashes at 5.5 s, e1 is owed at 8.022 s, deadline 8.123 s (bound 2.623 s from the crash).
func TestALateFailoverWithinTheSystemsTickNamesIt(t *testing.T) {
	s := time.Second
	run := func(take, tick time.Duration) (Outcome, string) {
		b := rtCrash().rtTake("b", take).rtToken("b", "e1", 2).with(func(m *history.Meta) { m.Tick = tick })
		r := resultOf(t, rtCheck(b), InvFailover)
		return r.Outcome, allText(r)
	}
	o, msg := run(9*s, s)
	require.Equal(t, Violated, o, "the specification's bound decides")
	require.Contains(t, msg, "877ms late, within the system's declared tick: it looks for free endpoints every 1s", msg)
	require.Contains(t, msg, "its own intervals imply a bound of 3.623s beside the specification's 2.623s", msg)
	_, msg = run(9*s, 0)
	require.NotContains(t, msg, "declared tick", "a system that declares no tick")
	_, msg = run(10*s, s)
	require.NotContains(t, msg, "declared tick", "late by more than the tick: something else")
}

// A takeover within NearBound of its bound, on either side, is named with its margin: such a verdict
// can go the other way on another run.
func TestAVerdictNearItsBoundSaysSo(t *testing.T) {
	s := time.Second
	run := func(take time.Duration) (Outcome, string) {
		r := resultOf(t, rtCheck(rtCrash().rtTake("b", take).rtToken("b", "e1", 2)), InvFailover)
		return r.Outcome, r.Message
	}
	o, msg := run(8*s + 200*time.Millisecond)
	require.Equal(t, Violated, o)
	require.Contains(t, msg, "near its bound: e1's takeover came after 2.7s against 2.623s, 77ms past it (2.9%)", msg)
	o, msg = run(8 * s)
	require.Equal(t, Pass, o)
	require.Contains(t, msg, "near its bound: e1's takeover came after 2.5s against 2.623s, 123ms inside it (4.7%)", msg)
	_, msg = run(10 * s)
	require.False(t, strings.Contains(msg, "near its bound"), msg)
}
