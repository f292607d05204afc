package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
)

// serviceOnly is a process instance with nothing but its service: no process, no links. fake, when not
// nil, is the libfaketime clock the instance is taken to run under, started; rate is the instance
// clock's rate, which the harness's model (vinstance.clock) runs at too.
func serviceOnly(t *testing.T, fake *fakeClock, rate float64) (*procInstance, time.Time) {
	t.Helper()
	start := time.Now()
	r := &runner{rec: history.NewRecorderFrom(start)}
	in := &vinstance{id: "i0-test", clock: clock.NewDrifting(clock.Real{}, rate)}
	p := &procInstance{r: r, in: in, label: "i0", clock: fake, out: newInstanceOutput("i0", nil), ready: make(chan readyReport, 1)}
	svc, err := newInstanceService(p)
	require.NoError(t, err)
	t.Cleanup(svc.close)
	p.svc = svc
	return p, start
}

func post(t *testing.T, p *procInstance, path string, body map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(p.svc.url+path, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// lastBelief is the last belief event recorded, and the notes.
func lastBelief(t *testing.T, p *procInstance) (history.Event, []string) {
	t.Helper()
	var b *history.Event
	var notes []string
	for _, e := range p.r.rec.Events() {
		switch e.Kind {
		case history.KindBelief:
			b = &e
		case history.KindNote:
			notes = append(notes, e.Note)
		}
	}
	require.NotNil(t, b, "a belief was recorded")
	return *b, notes
}

func unixMS(t time.Time) float64 { return float64(t.UnixNano()) / 1e6 }

// A belief's valid_ms runs from clock_ms, when the instance sent it: a report sent 2 s before it arrived
// (an instance paused between building it and its arrival) lapses 2 s earlier than one sent at its
// receipt, whatever the receipt's delay.
func TestBeliefIsAnchoredAtItsClockReading(t *testing.T) {
	t.Parallel()
	p, start := serviceOnly(t, nil, 1)
	post(t, p, "/ready", map[string]any{"clock_ms": unixMS(time.Now())})
	sent := time.Now().Add(-2 * time.Second)
	post(t, p, "/belief", map[string]any{"endpoint": "ep-0", "held": true, "token": 3, "valid_ms": 3000, "reason": "acquired",
		"clock_ms": unixMS(sent)})
	e, notes := lastBelief(t, p)
	want := sent.Sub(start) + 3*time.Second
	require.InDelta(t, float64(want), float64(e.Belief.Deadline), float64(3*time.Millisecond),
		"deadline %v, want clock_ms + valid_ms = %v (received at %v)", e.Belief.Deadline, want, e.At)
	require.Less(t, e.Belief.Deadline, e.At+1500*time.Millisecond, "not anchored at the receipt")
	require.Empty(t, notes)
}

// Under libfaketime the instance's clock reads an hour ahead and runs at its own rate: clock_ms is read on
// that clock, and what is left of valid_ms at the receipt runs at the clock's rate. At rate 0.5 a report
// sent 2 s (of the instance's clock) before it arrived, valid for 3 s, has 1 s of its clock left: 2 s of
// real time.
func TestBeliefIsAnchoredOnAFakedClock(t *testing.T) {
	t.Parallel()
	fake := &fakeClock{offset: faketimeOffset.Seconds(), rate: 0.5, start: time.Now().Add(-10 * time.Second)}
	p, start := serviceOnly(t, fake, 0.5)
	instNow := func() float64 { ms, ok := fake.readingAt(time.Now()); require.True(t, ok); return ms }
	post(t, p, "/ready", map[string]any{"clock_ms": instNow()})
	clockMS := instNow() - 2000
	post(t, p, "/belief", map[string]any{"endpoint": "ep-0", "held": true, "valid_ms": 3000, "clock_ms": clockMS})
	e, notes := lastBelief(t, p)
	// Real time at which the instance's clock reads clockMS + 3000.
	realAt := fake.start.Add(time.Duration((clockMS + 3000 - unixMS(fake.start) - fake.offset*1e3) / fake.rate * float64(time.Millisecond)))
	require.InDelta(t, float64(realAt.Sub(start)), float64(e.Belief.Deadline), float64(3*time.Millisecond),
		"deadline %v (received at %v)", e.Belief.Deadline, e.At)
	require.Empty(t, notes)
}

// Without clock_ms, valid_ms runs from the report's receipt, as it always did.
func TestBeliefWithoutAClockRunsFromItsReceipt(t *testing.T) {
	t.Parallel()
	p, start := serviceOnly(t, nil, 1)
	before := time.Since(start)
	post(t, p, "/belief", map[string]any{"endpoint": "ep-0", "held": true, "valid_ms": 3000})
	after := time.Since(start)
	e, notes := lastBelief(t, p)
	require.GreaterOrEqual(t, e.Belief.Deadline, before+3*time.Second)
	require.LessOrEqual(t, e.Belief.Deadline, after+3*time.Second)
	require.Empty(t, notes)
}

// A clock reading that cannot be the clock when the report was sent — ahead of the instance's clock, or
// not a clock in milliseconds at all — never lengthens a belief: valid_ms runs from the receipt, and the
// history says why. A reading a little ahead (the model's error) is the receipt, without a word.
func TestBeliefWithANonsenseClockRunsFromItsReceipt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		clock func(now time.Time) float64
		note  string
	}{
		{"ahead", func(now time.Time) float64 { return unixMS(now.Add(10 * time.Second)) }, "ahead of the instance's clock"},
		{"seconds", func(now time.Time) float64 { return float64(now.Unix()) }, "behind the instance's clock"},
		{"a little ahead", func(now time.Time) float64 { return unixMS(now.Add(clockAheadTolerance / 2)) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, start := serviceOnly(t, nil, 1)
			before := time.Since(start)
			post(t, p, "/belief", map[string]any{"endpoint": "ep-0", "held": true, "valid_ms": 3000, "clock_ms": tc.clock(time.Now())})
			after := time.Since(start)
			e, notes := lastBelief(t, p)
			require.GreaterOrEqual(t, e.Belief.Deadline, before+3*time.Second)
			require.LessOrEqual(t, e.Belief.Deadline, after+3*time.Second, "never later than the receipt + valid_ms")
			if tc.note == "" {
				require.Empty(t, notes)
				return
			}
			require.Len(t, notes, 1)
			require.Contains(t, notes[0], tc.note)
			require.True(t, strings.HasPrefix(notes[0], "instance i0: POST /belief: clock_ms"), notes[0])
		})
	}
}
