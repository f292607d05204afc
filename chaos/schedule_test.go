package chaos_test

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

// fakeEnv records what faults do to it.
type fakeEnv struct {
	mu    sync.Mutex
	live  []string
	calls []string
	n     int
}

func (e *fakeEnv) log(s string) { e.mu.Lock(); e.calls = append(e.calls, s); e.mu.Unlock() }
func (e *fakeEnv) Live() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.live...)
}
func (e *fakeEnv) Crash(id string) error {
	e.log("crash " + id)
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.live {
		if x == id {
			e.live = append(e.live[:i], e.live[i+1:]...)
		}
	}
	return nil
}
func (e *fakeEnv) Stop(_ context.Context, id string) error { return e.Crash(id) }
func (e *fakeEnv) StartInstance(context.Context) (string, error) {
	e.mu.Lock()
	e.n++
	id := string(rune('a' + e.n))
	e.live = append(e.live, id)
	e.mu.Unlock()
	e.log("start " + id)
	return id, nil
}
func (e *fakeEnv) Freeze(id string) error                  { e.log("freeze " + id); return nil }
func (e *fakeEnv) Thaw(id string) error                    { e.log("thaw " + id); return nil }
func (e *fakeEnv) SetClockRate(id string, _ float64) error { e.log("rate " + id); return nil }
func (e *fakeEnv) Link(string) (chaos.Link, error)         { return nil, errors.New("no links here") }
func (e *fakeEnv) Backend() chaos.Backend                  { return nil }
func (e *fakeEnv) Sessions() chaos.Sessions                { return nil }
func (e *fakeEnv) Holder(string) (string, bool)            { return "", false }

func TestRunnerAppliesAndEndsInOrder(t *testing.T) {
	env := &fakeEnv{live: []string{"x", "y", "z"}}
	var now time.Duration
	var mu sync.Mutex
	var recs []chaos.Record
	r := chaos.Runner{
		Env: env,
		Now: func() time.Duration { mu.Lock(); defer mu.Unlock(); return now },
		// Moments are played in goroutines of their own: real time passes between them (a fiftieth of
		// the schedule's, 40 ms at least), so each moment's instant fake faults are done before the next.
		Sleep: func(_ context.Context, d time.Duration) bool {
			time.Sleep(d / 50)
			mu.Lock()
			now += d
			mu.Unlock()
			return true
		},
		OnEnd: func(r chaos.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
	}
	s := chaos.Schedule{
		{At: 10 * time.Second, For: 5 * time.Second, Fault: chaos.Pause{Slot: 1}},
		{At: 12 * time.Second, Fault: chaos.Crash{Slot: 0}},
		{At: 20 * time.Second, Fault: chaos.Start{Count: 1}},
		{At: 30 * time.Second, Fault: chaos.Crash{Slot: 7}}, // no such slot: recorded as an error
	}
	err := r.Run(context.Background(), s)
	require.ErrorIs(t, err, chaos.ErrNoTarget)
	require.Equal(t, []string{"freeze y", "crash x", "thaw y", "start b"}, env.calls)
	require.Len(t, recs, 4)
	require.Equal(t, "f1", recs[1].ID, "the pause ends after the crash is applied and recorded")
	require.Equal(t, 10*time.Second, recs[1].Start)
	require.Equal(t, 15*time.Second, recs[1].End)
	require.True(t, recs[1].Applied.Targets[0] == "y")
	require.Error(t, recs[3].Err)
}

func TestRunnerEndsOpenFaultsWhenCancelled(t *testing.T) {
	env := &fakeEnv{live: []string{"x"}}
	ctx, cancel := context.WithCancel(context.Background())
	var ended []chaos.Record
	r := chaos.Runner{
		Env: env,
		Now: func() time.Duration { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) bool {
			cancel() // the run is interrupted while the pause is open
			return false
		},
		OnEnd: func(r chaos.Record) { ended = append(ended, r) },
	}
	_ = r.Run(ctx, chaos.Schedule{{At: 0, For: time.Minute, Fault: chaos.Pause{Slot: 0}}, {At: time.Second, Fault: chaos.Crash{Slot: 0}}})
	require.Equal(t, []string{"freeze x", "thaw x"}, env.calls, "an interrupted run must end its open faults, and apply nothing more")
	require.Len(t, ended, 1)
}

// gate is a fault whose end opens a gate; wait is one whose Apply blocks until the gate is open (an
// instance start that retries until a restarted Redis answers), or gives up after a while.
type gate struct{ open chan struct{} }

func (gate) Name() string { return "gate" }
func (g gate) Apply(context.Context, chaos.Env) (func(context.Context) error, chaos.Applied, error) {
	return func(context.Context) error { close(g.open); return nil }, chaos.Applied{}, nil
}

type wait struct{ open chan struct{} }

func (wait) Name() string { return "wait" }
func (w wait) Apply(ctx context.Context, _ chaos.Env) (func(context.Context) error, chaos.Applied, error) {
	select {
	case <-w.open:
		return nil, chaos.Applied{}, nil
	case <-time.After(5 * time.Second):
		return nil, chaos.Applied{}, errors.New("the gate never opened: a step waiting in Apply held up the schedule")
	}
}

// A step whose Apply waits for a later moment of the schedule must not hold that moment up: a start
// during a Redis restart waits for the restart's end, which must come at its time.
func TestRunnerPlaysLaterMomentsWhileAStepIsStillApplying(t *testing.T) {
	start := time.Now()
	var mu sync.Mutex
	var ends []chaos.Record
	r := chaos.Runner{
		Env: &fakeEnv{},
		Now: func() time.Duration { return time.Since(start) },
		Sleep: func(ctx context.Context, d time.Duration) bool {
			select {
			case <-time.After(d):
				return true
			case <-ctx.Done():
				return false
			}
		},
		OnEnd: func(r chaos.Record) { mu.Lock(); ends = append(ends, r); mu.Unlock() },
	}
	open := make(chan struct{})
	err := r.Run(context.Background(), chaos.Schedule{
		{At: 0, For: 200 * time.Millisecond, Fault: gate{open}},
		{At: 100 * time.Millisecond, Fault: wait{open}},
	})
	require.NoError(t, err)
	require.Len(t, ends, 2)
	for _, e := range ends {
		require.NoError(t, e.Err, e.Name)
		if e.Name == "gate" {
			require.Less(t, e.End, 2*time.Second, "the gate's end was held up by the waiting step")
		}
	}
}

func TestNemesisIsSeededAndKeepsAFleet(t *testing.T) {
	o := chaos.NemesisOptions{From: time.Minute, To: 30 * time.Minute, Instances: 3, TTL: 30 * time.Second}
	a, err := chaos.Nemesis(rand.New(rand.NewSource(42)), o)
	require.NoError(t, err)
	b, err := chaos.Nemesis(rand.New(rand.NewSource(42)), o)
	require.NoError(t, err)
	require.Equal(t, a.String(), b.String())
	require.Greater(t, len(a), 10)
	live := 3
	for _, st := range a {
		require.GreaterOrEqual(t, st.At, o.From)
		require.LessOrEqual(t, st.At+st.For, o.To)
		switch f := st.Fault.(type) {
		case chaos.Crash:
			require.Less(t, f.Slot, live)
			live--
		case chaos.Stop:
			require.Less(t, f.Slot, live)
			live--
		case chaos.Start:
			live += f.Count
		}
		require.GreaterOrEqual(t, live, 1, "the nemesis must never empty the fleet")
	}
	_, err = chaos.Nemesis(rand.New(rand.NewSource(1)), chaos.NemesisOptions{From: 0, To: time.Minute, Instances: 2, TTL: time.Second, Kinds: []string{"meteor"}})
	require.ErrorContains(t, err, "unknown nemesis fault")
}

func TestScaleScalesFaultDurations(t *testing.T) {
	s := chaos.Schedule{{At: 60 * time.Second, For: 40 * time.Second, Fault: chaos.Latency{Slot: -1, Latency: 600 * time.Millisecond}}}
	got := s.Scale(0.1)
	require.Equal(t, 6*time.Second, got[0].At)
	require.Equal(t, 4*time.Second, got[0].For)
	require.Equal(t, 60*time.Millisecond, got[0].Fault.(chaos.Latency).Latency)
}

func TestValidate(t *testing.T) {
	sessions := []string{"ep-0", "ep-1"}
	for name, tc := range map[string]struct {
		s    chaos.Schedule
		want string
	}{
		"fine": {chaos.Schedule{{At: 1, Fault: chaos.Crash{Slot: 2}}, {At: 2, Fault: chaos.Partition{Slot: 1}},
			{At: 3, Fault: chaos.SessionChange{Change: "add", ID: "ep-9"}}, {At: 4, Fault: chaos.Pause{Of: "ep-9"}}}, ""},
		"slot beyond the fleet":   {chaos.Schedule{{At: 1, Fault: chaos.Stop{Slot: 3}}}, "only 3 instances"},
		"slot gone after a crash": {chaos.Schedule{{At: 1, Fault: chaos.Crash{Slot: 0}}, {At: 2, Fault: chaos.Crash{Slot: 2}}}, "only 2 instances"},
		"started slot is fine":    {chaos.Schedule{{At: 1, Fault: chaos.Start{Count: 1}}, {At: 2, Fault: chaos.Crash{Slot: 3}}}, ""},
		"unknown holder":          {chaos.Schedule{{At: 1, Fault: chaos.Partition{Of: "ep-7"}}}, "not a session"},
		"unknown session":         {chaos.Schedule{{At: 1, Fault: chaos.SessionChange{Change: "pause", ID: "nope"}}}, "does not exist"},
		"removed then paused": {chaos.Schedule{{At: 1, Fault: chaos.SessionChange{Change: "remove", ID: "ep-1"}},
			{At: 2, Fault: chaos.SessionChange{Change: "pause", ID: "ep-1"}}}, "does not exist"},
	} {
		t.Run(name, func(t *testing.T) {
			err := chaos.Validate(tc.s, 3, sessions)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A step with a duration whose Apply fails, leaving nothing to end, is still recorded, with its error.
func TestRunnerRecordsAFailedStepWithADuration(t *testing.T) {
	var mu sync.Mutex
	var ends []chaos.Record
	r := chaos.Runner{
		Env:   &fakeEnv{live: []string{"x"}},
		Now:   func() time.Duration { return 0 },
		Sleep: func(context.Context, time.Duration) bool { return true },
		OnEnd: func(r chaos.Record) { mu.Lock(); ends = append(ends, r); mu.Unlock() },
	}
	err := r.Run(context.Background(), chaos.Schedule{{At: 0, For: time.Second, Fault: chaos.Pause{Slot: 7}}})
	require.ErrorIs(t, err, chaos.ErrNoTarget)
	require.Len(t, ends, 1, "the failed step must reach the history")
	require.Error(t, ends[0].Err)
}
