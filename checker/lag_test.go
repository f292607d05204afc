package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func inconclusiveText(r Result) string {
	s := ""
	for _, v := range r.Inconclusive {
		s += "\n" + v.Message
		if v.Lag != nil {
			s += " [" + v.Lag.String() + "]"
		}
	}
	return s
}

// A safety violation inside a lag spike is a violation: no overlap is excused by a slow machine.
func TestLagNeverExcusesSafety(t *testing.T) {
	b := healthy().poll("b", "e1", 8*time.Second+ms(20), 8*time.Second+ms(120), 1).
		withLag(history.LagSample{At: 8 * time.Second, Canary: ms(500), Sched: ms(500), Ping: ms(500)})
	rep := Check(b.build(), DefaultOptions())
	res := resultOf(t, rep, InvSinglePoller)
	require.Equal(t, Violated, res.Outcome, allText(res))
	require.Empty(t, res.Inconclusive)
	require.False(t, rep.Inconclusive(), "a run with a violation fails, whatever else was inconclusive")
	for _, r := range rep.Results {
		if !timingInvariants[r.Invariant] {
			require.NotEqual(t, Inconclusive, r.Outcome, "%s: %s", r.Invariant, r.Message)
		}
	}
}

// A holder late on its cadence inside a lag spike that can account for it is inconclusive: the window
// runs from its last poll, and the overrun past the cadence is no more than the lateness measured in it.
// A spike a third as long cannot account for it, however many hand-offs lay behind it.
func TestLagMakesACadenceGapInconclusive(t *testing.T) {
	s := time.Second
	b := pair(20 * s)
	b.events = dropPolls(b.events, "a", "e1", 6*s, 7*s)
	// a polled at 5.015 s and next at 7.015 s: 2 s against its cadence of 1.201 s, 799 ms over.
	res := resultOf(t, Check(b.withLag(history.LagSample{At: 6 * s, Canary: ms(850)}).build(), DefaultOptions()), InvLiveness)
	require.Equal(t, Inconclusive, res.Outcome, allText(res)+inconclusiveText(res))
	v := res.Inconclusive[0]
	require.Equal(t, 5*s+ms(15), v.From)
	require.Equal(t, 7*s+ms(15), v.To)
	require.Equal(t, 2*s-s-ms(100)-FailoverTolerance, v.Over)
	require.Equal(t, ms(850), v.Lag.Max)
	require.Equal(t, ms(850), v.Lag.Covered)

	b = pair(20 * s)
	b.events = dropPolls(b.events, "a", "e1", 6*s, 7*s)
	res = resultOf(t, Check(b.withLag(history.LagSample{At: 6 * s, Canary: ms(250)}).build(), DefaultOptions()), InvLiveness)
	require.Equal(t, Violated, res.Outcome, allText(res))
	require.Contains(t, allText(res), "too little to account for 799ms")
}

// One finding inside the spike, one far from it: the result stays violated and says what was left out.
func TestLagLeavesTheOtherViolations(t *testing.T) {
	s := time.Second
	b := pair(20 * s)
	b.events = dropPolls(b.events, "a", "e1", 6*s, 7*s)
	b.events = dropPolls(b.events, "b", "e2", 14*s, 17*s)
	rep := Check(b.withLag(history.LagSample{At: 6 * s, Canary: ms(850)}).build(), DefaultOptions())
	res := resultOf(t, rep, InvLiveness)
	require.Equal(t, Violated, res.Outcome)
	require.Len(t, res.Violations, 1)
	require.Equal(t, "e2", res.Violations[0].Endpoint)
	require.Len(t, res.Inconclusive, 1)
	require.Equal(t, "e1", res.Inconclusive[0].Endpoint)
	require.Contains(t, res.Message, "inconclusive, not counted")
	require.False(t, rep.Inconclusive())
}

// A fault that could not be applied (nobody held the endpoint to crash) leaves the run Unknown, and the
// invariant the scenario exists to exercise with it; when the harness ran late within the lease TTL
// before the fault, the machine may have cost the system its holder, and both are inconclusive, with the
// lag. Lag after the fault, or none, leaves them Unknown.
func TestAFaultNotAppliedBesideLagIsInconclusive(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		lag  []history.LagSample
		want Outcome
	}{
		{"lag in the TTL before the fault", []history.LagSample{{At: 3 * s, Ping: ms(300)}}, Inconclusive},
		{"lag after the fault", []history.LagSample{{At: 9 * s, Canary: ms(300)}}, Unknown},
		{"lag below the threshold", []history.LagSample{{At: 4 * s, Canary: LagThreshold}}, Unknown},
		{"no lag", nil, Unknown},
	} {
		b := pair(20 * s)
		b.add(history.Event{Kind: history.KindFault, At: 5 * s, End: 5 * s,
			Fault: &history.Fault{ID: "f1", Name: "crash", Err: "chaos: nobody holds that endpoint: ep-9"}})
		if tc.lag != nil {
			b = b.withLag(tc.lag...)
		}
		b.meta.Exercises = []string{InvFailover}
		rep := Check(b.build(), DefaultOptions())
		a := resultOf(t, rep, InvAssumptions)
		require.Equal(t, tc.want, a.Outcome, "%s: %s", tc.name, a.Message)
		require.Contains(t, a.Message, "did not go as scheduled", tc.name)
		require.False(t, rep.OK(), tc.name)
		if tc.want == Inconclusive {
			require.Len(t, a.Inconclusive, 1)
			require.NotNil(t, a.Inconclusive[0].Lag)
			require.Equal(t, Inconclusive, resultOf(t, rep, InvFailover).Outcome, tc.name)
			require.True(t, rep.Inconclusive(), tc.name)
		}
	}
}
