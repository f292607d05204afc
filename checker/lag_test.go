package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// withLag records harness lag samples in the header, as the lag monitor does.
func (b *builder) withLag(samples ...history.LagSample) *builder {
	return b.with(func(m *history.Meta) {
		m.Lag = &history.Lag{Window: ms(100), Floor: ms(10), Windows: 200, Samples: samples}
	})
}

// lateCrash: a crashes at 5.5 s; b takes e1 over at takeover, against the bound of 5 s.
func lateCrash(takeover time.Duration) *builder {
	return crashBase().fault("f1", "crash", 5*time.Second+ms(500), 5*time.Second+ms(500), true, false, "a").
		life("a", history.LifeCrashed, 5*time.Second+ms(500)).
		polls("b", "e1", takeover, 20*time.Second, time.Second, 2)
}

func TestLagMakesATimingViolationInconclusive(t *testing.T) {
	s := time.Second
	spike := history.LagSample{At: 8 * s, Canary: ms(40), Sched: ms(33)}
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		lag     time.Duration // of the inconclusive finding
		source  string
		msg     string
	}{
		{
			// 100 ms over the bound, with a canary 40 ms late inside the takeover's window: four
			// hand-offs that late account for 160 ms.
			name:    "a late takeover inside a lag spike",
			b:       lateCrash(10*s + ms(600)).withLag(spike),
			outcome: Inconclusive, lag: ms(40), source: LagCanary, msg: "harness lag 40ms (canary timer, at 8s)",
		},
		{
			name:    "a late takeover with the lag after it",
			b:       lateCrash(10*s + ms(600)).withLag(history.LagSample{At: 15 * s, Canary: ms(40)}),
			outcome: Violated, msg: "over the bound",
		},
		{
			name:    "lag at the threshold is not above it",
			b:       lateCrash(10*s + ms(600)).withLag(history.LagSample{At: 8 * s, Canary: LagThreshold}),
			outcome: Violated, msg: "over the bound",
		},
		{
			// 1.5 s over the bound: 40 ms of lag cannot account for it.
			name:    "a takeover far too late for the lag",
			b:       lateCrash(12 * s).withLag(spike),
			outcome: Violated, msg: "too little to account for 1.5s over the bound",
		},
		{
			name:    "the scheduler's reading counts",
			b:       lateCrash(10*s + ms(600)).withLag(history.LagSample{At: 8 * s, Sched: ms(67)}),
			outcome: Inconclusive, lag: ms(67), source: LagScheduler,
		},
		{
			name:    "the backend's late answer counts",
			b:       lateCrash(10*s + ms(600)).withLag(history.LagSample{At: 8 * s, Ping: ms(300)}),
			outcome: Inconclusive, lag: ms(300), source: LagPing,
		},
		{
			// The ping was out while Redis was paused: it measured the fault, not the machine.
			name: "a backend ping during a backend fault does not count",
			b: lateCrash(10*s+ms(600)).fault("f0", "redis-pause", 4*s, 5*s+ms(450), false, false).
				withLag(history.LagSample{At: 5*s + ms(400), Ping: ms(600)}),
			outcome: Violated, msg: "over the bound",
		},
		{
			name:    "a history without lag data is judged as before",
			b:       lateCrash(10*s + ms(600)).with(func(m *history.Meta) { m.Schema = 1 }),
			outcome: Violated, msg: "over the bound",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.b.build(), DefaultOptions())
			res := resultOf(t, rep, InvFailover)
			require.Equal(t, tc.outcome, res.Outcome, allText(res))
			require.Contains(t, allText(res)+inconclusiveText(res), tc.msg)
			require.False(t, rep.OK())
			require.Equal(t, tc.outcome == Inconclusive, rep.Inconclusive())
			if tc.outcome != Inconclusive {
				require.Empty(t, res.Inconclusive)
				return
			}
			require.Empty(t, res.Violations)
			require.Len(t, res.Inconclusive, 1)
			v := res.Inconclusive[0]
			require.Equal(t, "e1", v.Endpoint)
			require.Equal(t, 5*s+ms(500), v.From)
			require.Equal(t, 10*s+ms(600), v.To)
			require.Equal(t, ms(100), v.Over)
			require.NotNil(t, v.Lag)
			require.Equal(t, tc.lag, v.Lag.Max)
			require.Equal(t, tc.source, v.Lag.Source)
			require.Contains(t, res.Message, "so the run cannot tell the system's lateness from the harness's")
		})
	}
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
	// The stray poll also unbalanced the fleet for a sample, a timing finding the spike explains.
	require.Equal(t, Inconclusive, resultOf(t, rep, InvBalance).Outcome)
}

// One finding inside the spike, one far from it: the result stays violated and says what was left out.
func TestLagLeavesTheOtherViolations(t *testing.T) {
	s := time.Second
	b := crashBase().polls("a", "e3", 0, 5*s+ms(500), s, 1).
		fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").
		life("a", history.LifeCrashed, 5*s+ms(500)).
		polls("b", "e1", 10*s+ms(600), 20*s, s, 2).
		polls("b", "e3", 13*s, 20*s, s, 2).
		withLag(history.LagSample{At: 10 * s, Canary: ms(40)})
	rep := Check(b.build(), DefaultOptions())
	res := resultOf(t, rep, InvFailover)
	require.Equal(t, Violated, res.Outcome)
	require.Len(t, res.Violations, 1)
	require.Equal(t, "e3", res.Violations[0].Endpoint)
	require.Len(t, res.Inconclusive, 1)
	require.Equal(t, "e1", res.Inconclusive[0].Endpoint)
	require.Contains(t, res.Message, "inconclusive, not counted")
	require.False(t, rep.Inconclusive())
}

// A steady window's starvation gap inside a spike is inconclusive too.
func TestLagMakesALivenessGapInconclusive(t *testing.T) {
	s := time.Second
	// e1 unpolled from 6.02 s to 10.1 s: 4.08 s against poll interval + TTL = 4 s.
	b := newBuilder().with(func(m *history.Meta) {
		m.Endpoints = 1
		m.Steady = []history.Window{{From: 2 * s, To: 18 * s}}
	}).life("a", history.LifeStarted, 0).
		polls("a", "e1", ms(20), 6*s+ms(100), s, 1).
		polls("a", "e1", 10*s+ms(100), 20*s, s, 1).
		withLag(history.LagSample{At: 9 * s, Sched: ms(50)})
	rep := Check(b.build(), DefaultOptions())
	res := resultOf(t, rep, InvLiveness)
	require.Equal(t, Inconclusive, res.Outcome, allText(res)+inconclusiveText(res))
	require.Equal(t, ms(80), res.Inconclusive[0].Over)
	require.True(t, rep.Inconclusive())
}

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

// A shard fault's cadence gap inside a spike is inconclusive; the window is the gap itself.
func TestLagMakesAShardCadenceGapInconclusive(t *testing.T) {
	s := time.Second
	b := shardBase(true).polls("a", "ep-3", 6*s, 20*s, ms(500), 1).
		polls("b", "ep-2", 6*s+ms(650), 20*s, ms(500), 2).polls("b", "ep-0", 14*s, 20*s, ms(500), 2).
		withLag(history.LagSample{At: 6 * s, Canary: ms(120)})
	res := resultOf(t, Check(b.build(), DefaultOptions()), InvFailover)
	require.Equal(t, Inconclusive, res.Outcome, allText(res)+inconclusiveText(res))
	v := res.Inconclusive[0]
	require.Equal(t, "ep-2", v.Endpoint)
	require.Equal(t, 5*s+ms(620), v.From, "from the end of the holder's last poll before the fault")
	require.Equal(t, 6*s+ms(650), v.To)
	require.Equal(t, ms(429), v.Over, "1.03 s against the cadence bound, poll interval + tolerance = 601 ms")
}

// A history judged by the bound table: the window runs from the fault to the takeover, the excess is
// past the crash's deadline (a TTL and the tolerance).
func TestLagWithTheBoundTable(t *testing.T) {
	s := time.Second
	at := 5*s + ms(500)
	b := tabled().fault("f1", "crash", at, at, true, false, "a").life("a", history.LifeCrashed, at).
		polls("b", "e1", 8*s+ms(680), 20*s, s, 2).
		withLag(history.LagSample{At: 8 * s, Canary: ms(40)})
	res := resultOf(t, Check(b.build(), DefaultOptions()), InvFailover)
	require.Equal(t, Inconclusive, res.Outcome, allText(res)+inconclusiveText(res))
	v := res.Inconclusive[0]
	require.Equal(t, at, v.From)
	require.Equal(t, 8*s+ms(680), v.To)
	require.Equal(t, 8*s+ms(680)-(at+3*s+FailoverTolerance), v.Over)
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
		b := crashBase()
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
