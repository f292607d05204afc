package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestSingleHolder(t *testing.T) {
	s := time.Second
	acq, ren := history.ReasonAcquired, history.ReasonRenewed
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		bad     int // violations
		caught  int
		msg     string
	}{
		{
			name: "handoff after release",
			b: newBuilder().held("a", "e1", 0, 1, acq, 0).belief("a", "e1", 5*s, false, 1).
				held("b", "e1", 5*s+ms(100), 2, acq, 0),
			outcome: Pass,
		},
		{
			name: "renewals extend a belief into the next holder's",
			b: newBuilder().assume(0.01).held("a", "e1", 0, 1, acq, 3*s).held("a", "e1", s, 1, ren, 4*s).
				held("a", "e1", 2*s, 1, ren, 5*s).held("b", "e1", 4*s, 2, acq, 7*s),
			outcome: Violated, bad: 1, msg: "no fault outside the system's assumptions",
		},
		{
			name: "a belief lapses at its deadline",
			b: newBuilder().assume(0.01).held("a", "e1", 0, 1, acq, 3*s).held("b", "e1", 3*s+ms(500), 2, acq, 6*s).
				belief("a", "e1", 6*s, false, 1),
			outcome: Pass,
		},
		{
			name: "a renewal after the deadline begins a new belief",
			b: newBuilder().assume(0.01).held("a", "e1", 0, 1, acq, 2*s).held("b", "e1", 3*s, 2, acq, 6*s).
				held("a", "e1", 4*s, 1, ren, 7*s),
			outcome: Violated, bad: 1,
		},
		{
			name: "a crash ends a belief",
			b: newBuilder().life("a", history.LifeStarted, 0).held("a", "e1", 0, 1, acq, 0).
				life("a", history.LifeCrashed, 2*s).held("b", "e1", 3*s, 2, acq, 0),
			outcome: Pass,
		},
		{
			name: "a stop ends a belief",
			b: newBuilder().life("a", history.LifeStarted, 0).held("a", "e1", 0, 1, acq, 0).
				life("a", history.LifeStopped, 2*s).held("b", "e1", 2*s, 2, acq, 0),
			outcome: Pass,
		},
		{
			name: "an older history without deadlines ends beliefs at explicit events only",
			b: newBuilder().belief("a", "e1", 0, true, 1).belief("b", "e1", 4*s, true, 2).
				belief("a", "e1", 5*s, false, 1),
			outcome: Violated, bad: 1,
		},
		{
			name: "one instance's successive holdings never overlap themselves",
			b: newBuilder().held("a", "e1", 0, 1, acq, 0).held("a", "e1", s, 1, ren, 0).
				held("a", "e1", 2*s, 3, acq, 0),
			outcome: Pass,
		},
		{
			name: "outside the assumptions and refused at the resource: caught",
			b: newBuilder().assume(0.01, "pause").with(func(m *history.Meta) { m.Fencing = true }).
				held("a", "e1", 0, 1, acq, 0).paused("f1", "a", s, 4*s).
				held("b", "e1", 2*s, 2, acq, 0).poll("b", "e1", 2*s+ms(10), 2*s+ms(50), 2).
				refused("a", "e1", 4*s+ms(10), 1, 2).belief("a", "e1", 4*s+ms(20), false, 1),
			outcome: Caught, caught: 1, msg: "expected and caught",
		},
		{
			name: "outside the assumptions but reached the resource: violated",
			b: newBuilder().assume(0.01, "pause").
				held("a", "e1", 0, 1, acq, 0).fault("f1", "pause", s, 4*s, false, false, "a").
				held("b", "e1", 2*s, 2, acq, 0).poll("a", "e1", 4*s+ms(10), 4*s+ms(50), 1).
				belief("a", "e1", 4*s+ms(60), false, 1),
			outcome: Violated, bad: 1, msg: "stale poll reached the resource",
		},
		{
			// The newer holder was paused and acquired afresh after waking: its grant is Redis's
			// own, and what went wrong is the older holder still believing (its key deleted under
			// it). The pause explains nothing of that.
			name: "a fault outside the assumptions on the newer holder only explains nothing",
			b: newBuilder().assume(0.01, "pause").
				fault("f1", "pause", 0, 2*s, false, false, "b").held("a", "e1", s, 1, acq, 0).
				held("b", "e1", 2*s+ms(100), 2, acq, 0).belief("a", "e1", 3*s, false, 1),
			outcome: Violated, bad: 1,
		},
		{
			name: "a fault outside the assumptions on another instance explains nothing",
			b: newBuilder().assume(0.01, "pause").
				held("a", "e1", 0, 1, acq, 0).fault("f1", "pause", s, 4*s, false, false, "c").
				held("b", "e1", 2*s, 2, acq, 0).belief("a", "e1", 3*s, false, 1),
			outcome: Violated, bad: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.b.poll("a", "e9", 0, ms(1), 0) // a poll, so that the history can be judged
			rep := Check(tc.b.build(), DefaultOptions())
			r := resultOf(t, rep, InvSingleHolder)
			require.Equal(t, tc.outcome, r.Outcome, allText(r))
			require.Len(t, r.Violations, tc.bad, allText(r))
			require.Len(t, r.Caught, tc.caught, allText(r))
			require.Contains(t, allText(r)+caughtText(r), tc.msg)
			for _, v := range append(r.Violations, r.Caught...) {
				require.Equal(t, "e1", v.Endpoint)
				require.Len(t, v.Instances, 2)
				require.NotEmpty(t, v.Events)
			}
			if tc.outcome == Caught {
				require.True(t, Report{Results: []Result{r}}.OK(), "a caught finding lets the run pass")
			}
		})
	}
}

// The stale holder is the older holding: its instance comes first, and the window and both tokens are
// named.
func TestSingleHolderNamesBothHoldersAndWindow(t *testing.T) {
	s := time.Second
	h := newBuilder().assume(0.01).poll("c", "e9", 0, ms(1), 0).
		held("b", "e1", 0, 7, history.ReasonAcquired, 5*s).held("a", "e1", 3*s, 8, history.ReasonAcquired, 8*s).build()
	r := resultOf(t, Check(h, DefaultOptions()), InvSingleHolder)
	require.Equal(t, Violated, r.Outcome)
	v := r.Violations[0]
	require.Equal(t, []string{"b", "a"}, v.Instances)
	require.Equal(t, 3*s, v.At)
	for _, want := range []string{"for 2s [3s, 5s]", "token 7", "token 8", "until its deadline", "did not poll"} {
		require.Contains(t, v.Message, want)
	}
}

// A clock 50 times outside the drift bound gives two believed holders for 2 s; the stale holder does
// not poll in the window, so every resource-level invariant holds. The belief overlap and the breach of
// the assumptions must both show, and the run must not pass.
func TestDriftBeyondBoundWithTwoBelieversIsReported(t *testing.T) {
	s := time.Second
	build := func(rate string, outside ...string) history.History {
		b := healthy().assume(0.01, outside...).
			faultP("f1", "clock-drift", 0, 20*s, map[string]string{"rate": rate, "slot": "0"}, "a").
			// a's slow clock puts its deadline 2 s past the moment b is granted e1.
			held("a", "e5", ms(12), 1, history.ReasonAcquired, 9*s).held("b", "e5", 7*s, 2, history.ReasonAcquired, 10*s)
		return b.build()
	}

	rep := Check(build("0.5"), DefaultOptions()) // rate error 0.5: 50 times the bound 0.01
	a := resultOf(t, rep, InvAssumptions)
	require.Equal(t, Unknown, a.Outcome)
	require.Contains(t, a.Message, "f1 clock-drift")
	require.Contains(t, a.Message, "beyond the drift bound 0.01")
	r := resultOf(t, rep, InvSingleHolder)
	require.Equal(t, Caught, r.Outcome, allText(r))
	require.Len(t, r.Caught, 1)
	require.Equal(t, []string{"f1 clock-drift"}, r.Caught[0].Outside)
	require.Contains(t, r.Caught[0].Message, "for 2s [7s, 9s]")
	require.False(t, rep.OK(), "an undeclared breach of the assumptions is never a pass")

	declared := Check(build("0.5", "clock-drift"), DefaultOptions())
	a = resultOf(t, declared, InvAssumptions)
	require.Equal(t, Pass, a.Outcome, a.Message)
	require.Contains(t, a.Message, "outside them by declaration: f1 clock-drift")
	require.Equal(t, Caught, resultOf(t, declared, InvSingleHolder).Outcome)
	for _, r := range declared.Results {
		require.Contains(t, []Outcome{Pass, Caught, Skipped}, r.Outcome, "%s: %s", r.Invariant, r.Message)
	}
	require.True(t, declared.OK(), "declared outside the assumptions and caught: the run passes, and says so")

	within := Check(build("1.005"), DefaultOptions()) // inside the bound: the overlap is a defect
	require.Equal(t, Pass, resultOf(t, within, InvAssumptions).Outcome)
	r = resultOf(t, within, InvSingleHolder)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Len(t, r.Violations, 1)
	require.False(t, within.OK())
}

// A clock-drift fault whose rate cannot be read is never taken to lie inside the drift bound.
func TestUnreadableDriftIsABreach(t *testing.T) {
	h := healthy().assume(0.01).faultP("f1", "clock-drift", 0, time.Second, map[string]string{"slot": "0"}, "a").build()
	rep := Check(h, DefaultOptions())
	a := resultOf(t, rep, InvAssumptions)
	require.Equal(t, Unknown, a.Outcome)
	require.Contains(t, a.Message, "cannot be read")
	require.False(t, rep.OK())

	// Older histories record no bound: drift is not judged, and the message says so.
	h = healthy().faultP("f1", "clock-drift", 0, time.Second, map[string]string{"rate": "3"}, "a").build()
	a = resultOf(t, Check(h, DefaultOptions()), InvAssumptions)
	require.Equal(t, Pass, a.Outcome)
	require.Contains(t, a.Message, "records no assumptions")
}

// A clock rate written exactly at the bound lies inside it, whatever rate-1 rounds to in floating point.
func TestDriftAtTheBoundIsInside(t *testing.T) {
	h := healthy().assume(0.025).faultP("f1", "clock-drift", 0, time.Second, map[string]string{"rate": "0.975"}, "a").build()
	a := resultOf(t, Check(h, DefaultOptions()), InvAssumptions)
	require.Equal(t, Pass, a.Outcome, a.Message)
}
