package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
)

func TestRunDeadlineConvertsTheInstanceClock(t *testing.T) {
	t.Parallel()
	now := time.Unix(5000, 0)
	for name, tc := range map[string]struct {
		left time.Duration
		rate float64
		want time.Duration
	}{
		"true clock":          {left: 10 * time.Second, rate: 1, want: 12 * time.Second},
		"fast clock, earlier": {left: 10 * time.Second, rate: 2, want: 7 * time.Second},
		"slow clock, later":   {left: 10 * time.Second, rate: 0.5, want: 22 * time.Second},
		"already passed":      {left: -time.Second, rate: 1, want: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, runDeadline(2*time.Second, now.Add(tc.left), now, tc.rate))
		})
	}
}

func TestObserveRecordsDeadlinesInRunTime(t *testing.T) {
	t.Parallel()
	rec := history.NewRecorderFrom(time.Now())
	in := newTestInstance()
	in.clock.SetRate(2)
	var tracked []history.Belief
	obs := in.observe(rec, func(_, _ string, b history.Belief) { tracked = append(tracked, b) })

	obs("ep-0", history.Belief{Held: true, Token: 7, Reason: history.ReasonAcquired, Until: in.clock.Now().Add(20 * time.Second)})
	obs("ep-0", history.Belief{Held: true, Token: 7, Reason: history.ReasonRenewed, Until: in.clock.Now().Add(40 * time.Second)})
	obs("ep-0", history.Belief{Held: false, Token: 7, Reason: "released"})

	ev := rec.Events()
	require.Len(t, ev, 3)
	require.Len(t, tracked, 3)
	// 20 s on a clock that runs twice as fast is 10 s of run time; a loaded machine may add a little.
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second} {
		b := ev[i].Belief
		require.True(t, b.Until.IsZero(), "Until is never recorded")
		require.InDelta(t, float64(ev[i].At+want), float64(b.Deadline), float64(time.Second), "event %d", i)
	}
	require.Equal(t, history.ReasonRenewed, ev[1].Belief.Reason, "a renewal is recorded as reported")
	require.Zero(t, ev[2].Belief.Deadline, "no deadline reported, none recorded")
}

func TestAssumptionsNameTheFaultsOutside(t *testing.T) {
	t.Parallel()
	timing := SpecTiming()
	sc := Scenario{Outside: []string{"redis-restart", "pause"}}
	s := chaos.Schedule{
		{Fault: chaos.Pause{Slot: 0}},
		{Fault: chaos.Drift{Slot: 0, Rate: 1.005}},
		{Fault: chaos.Drift{Slot: 0, Rate: 1.01}},
		{Fault: chaos.Drift{Slot: 0, Rate: 0.99}},
		{Fault: chaos.Stall{Slot: 0}},
	}
	a := assumptions(sc, timing, deploy.About{Persistence: "aof"}, s)
	require.Equal(t, 0.01, a.DriftBound)
	require.Equal(t, "aof", a.Persistence)
	require.Equal(t, "single", a.Topology)
	require.Equal(t, []string{"redis-restart", "pause"}, a.Outside, "drift within the bound and a stall are inside")

	s = append(s, chaos.Step{Fault: chaos.Drift{Slot: 1, Rate: 0.9}})
	a = assumptions(Scenario{}, timing, deploy.About{}, s)
	require.Equal(t, "none", a.Persistence)
	require.Equal(t, []string{"pause", "clock-drift"}, a.Outside)
}

func TestPlanJittersFaultsStartsAndSteadyWindows(t *testing.T) {
	t.Parallel()
	sc := Scenario{
		Name: "j", Instances: 3, Endpoints: 3, Duration: 150 * time.Second,
		Steps: chaos.Schedule{
			{At: 60 * time.Second, For: 30 * time.Second, Fault: chaos.Partition{Slot: 0}},
			{At: 60 * time.Second, Fault: chaos.Start{Count: 1}},
			{At: 100 * time.Second, Jitter: -1, Fault: chaos.Crash{Slot: 1}},
		},
		Steady: []history.Window{{From: 130 * time.Second, To: 150 * time.Second}},
	}
	o := Options{System: planOnly{}, Scenario: sc, TimeScale: 1}
	seen := map[time.Duration]bool{}
	for seed := int64(1); seed <= 8; seed++ {
		o.Seed = seed
		p, err := plan(o)
		require.NoError(t, err)
		again, err := plan(o)
		require.NoError(t, err)
		require.Equal(t, p, again, "one seed, one plan")

		shift := p.schedule[0].At - 60*time.Second
		require.GreaterOrEqual(t, shift, time.Duration(0))
		require.LessOrEqual(t, shift, chaos.DefaultJitter)
		require.Equal(t, p.schedule[0].At, p.schedule[1].At, "steps written together move together")
		require.Equal(t, 100*time.Second, p.schedule[2].At, "a pinned step stays")
		require.Equal(t, 130*time.Second+shift, p.steady[0].From, "the steady window waits for the moved steps")
		require.Len(t, p.starts, 3)
		for _, d := range p.starts {
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, SpecTiming().PollInterval)
		}
		seen[shift] = true
	}
	require.Greater(t, len(seen), 1, "seeds move the faults")

	sc.FaultJitter, sc.StartJitter = -1, -1
	o.Scenario = sc
	p, err := plan(o)
	require.NoError(t, err)
	require.Equal(t, 60*time.Second, p.schedule[0].At)
	require.Equal(t, []time.Duration{0, 0, 0}, p.starts)
	require.Equal(t, 130*time.Second, p.steady[0].From)
}

func TestJitterNeverMovesAStepPastTheRun(t *testing.T) {
	t.Parallel()
	sc := Scenario{Name: "end", Instances: 1, Endpoints: 1, Duration: 100 * time.Second, FaultJitter: time.Minute,
		Steps: chaos.Schedule{{At: 90 * time.Second, For: 9 * time.Second, Fault: chaos.Pause{Slot: 0}}}}
	for seed := int64(1); seed <= 20; seed++ {
		p, err := plan(Options{System: planOnly{}, Scenario: sc, TimeScale: 1, Seed: seed})
		require.NoError(t, err)
		require.LessOrEqual(t, p.schedule[0].At+p.schedule[0].For, sc.Duration)
	}
}

func newTestInstance() *vinstance {
	in := &vinstance{id: "i0", clock: clock.NewDrifting(clock.Real{}, 1)}
	in.pclock = clock.NewPausable(in.clock)
	return in
}

// planOnly is a system for tests that only plan a run: plan needs a system, and never builds an instance.
type planOnly struct{}

func (planOnly) Name() string { return "plan-only" }

func (planOnly) NewInstance(InstanceConfig) (Instance, error) {
	return nil, errors.New("planOnly: only plans, never runs")
}
