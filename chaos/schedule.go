package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

// Step is one scheduled fault: applied At after the run starts, ended For later (instantaneous when For
// is zero). Times are spec times; Scale converts them to run times.
type Step struct {
	At  time.Duration `json:"at"`
	For time.Duration `json:"for,omitempty"`
	// Jitter bounds how much later than At the step may come, drawn per seed (see Jittered): zero takes
	// the scenario's bound, a negative value pins the step to At.
	Jitter time.Duration `json:"-"`
	Fault  Fault         `json:"-"`
}

// MarshalJSON writes the fault's name and arguments beside the times.
func (s Step) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		At    string `json:"at"`
		For   string `json:"for,omitempty"`
		Fault string `json:"fault"`
		Args  Fault  `json:"args"`
	}{ms(s.At), durOrEmpty(s.For), s.Fault.Name(), s.Fault})
}

func durOrEmpty(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return ms(d)
}

// String is one line for logs: "at 10s for 5s: partition {slot 0}".
func (s Step) String() string {
	args, _ := json.Marshal(s.Fault)
	if s.For > 0 {
		return fmt.Sprintf("at %s for %s: %s %s", ms(s.At), ms(s.For), s.Fault.Name(), args)
	}
	return fmt.Sprintf("at %s: %s %s", ms(s.At), s.Fault.Name(), args)
}

// Schedule is an ordered list of steps.
type Schedule []Step

// Scaler is implemented by faults whose parameters include durations of the scenario's timing (a
// latency, for example), so that a time scale applies to them as it does to the schedule.
type Scaler interface {
	Scaled(by float64) Fault
}

// Scale returns the schedule with every time multiplied by f, fault parameters included.
func (s Schedule) Scale(f float64) Schedule {
	out := make(Schedule, len(s))
	for i, st := range s {
		st.At = time.Duration(float64(st.At) * f)
		st.For = time.Duration(float64(st.For) * f)
		if sc, ok := st.Fault.(Scaler); ok {
			st.Fault = sc.Scaled(f)
		}
		out[i] = st
	}
	return out
}

// DefaultJitter is how much later than written a step may come when neither the step nor its scenario
// states a bound: a few seconds of spec time, enough to move a fault across the poll and renewal
// cycle (polls every 5 s), well inside the recovery slack every scenario leaves.
const DefaultJitter = 3 * time.Second

// Jittered moves each step later by a draw from rng, so that each seed puts the faults at another point
// of the system's cycles. A step's bound is its Jitter, or def when that is zero; a negative bound pins
// it. Steps written for the same moment move together (one draw, bounded by the smallest of their
// bounds), so faults meant to coincide still do. No step is moved past end (the run's duration). It
// returns the moved schedule and each step's shift; the same rng state gives the same result.
func (s Schedule) Jittered(rng *rand.Rand, def, end time.Duration) (Schedule, []time.Duration) {
	bound := func(st Step) time.Duration {
		switch {
		case st.Jitter < 0:
			return 0
		case st.Jitter > 0:
			return st.Jitter
		}
		return max(def, 0)
	}
	// The moments in the order they are written, each with its bound and its room before end.
	type moment struct{ bound, room time.Duration }
	moments := map[time.Duration]*moment{}
	var order []time.Duration
	for _, st := range s {
		m, ok := moments[st.At]
		if !ok {
			m = &moment{bound: bound(st), room: end - st.At}
			moments[st.At] = m
			order = append(order, st.At)
		}
		m.bound = min(m.bound, bound(st))
		m.room = min(m.room, end-(st.At+st.For))
	}
	shiftAt := map[time.Duration]time.Duration{}
	for _, at := range order {
		m := moments[at]
		b := min(m.bound, m.room)
		if b <= 0 {
			continue
		}
		// Whole milliseconds, so the printed schedule is the one that runs.
		shiftAt[at] = time.Duration(rng.Int63n(int64(b/time.Millisecond)+1)) * time.Millisecond
	}
	out := make(Schedule, len(s))
	shifts := make([]time.Duration, len(s))
	for i, st := range s {
		shifts[i] = shiftAt[st.At]
		st.At += shifts[i]
		out[i] = st
	}
	return out, shifts
}

// String lists the steps one per line.
func (s Schedule) String() string {
	var b strings.Builder
	for _, st := range s {
		b.WriteString(st.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// isFault reports whether a step's fault is a real fault (recorded as a fault window) rather than an
// ordinary operation such as a session change.
func isFault(f Fault) bool {
	if q, ok := f.(interface{ IsFault() bool }); ok {
		return q.IsFault()
	}
	return true
}

// Record is a fault as it happened, handed to the runner's callback when the fault ends.
type Record struct {
	// ID is "f1", "f2", ... in schedule order.
	ID      string
	Name    string
	Start   time.Duration
	End     time.Duration
	Applied Applied
	// Err is set when the fault could not be applied or ended.
	Err error
	// IsFault is false for schedule steps that are ordinary operations.
	IsFault bool
}

// Runner plays a schedule against an Env.
type Runner struct {
	// Env is what the faults act on.
	Env Env
	// Now returns the run time (since run start) on the harness's monotonic clock.
	Now func() time.Duration
	// Sleep waits for d or until ctx ends; it reports whether d elapsed.
	Sleep func(ctx context.Context, d time.Duration) bool
	// OnApply is called after each step is applied (for progress and logs). Optional.
	OnApply func(Record)
	// OnEnd is called when a step has ended, with its full window. Required for recording.
	OnEnd func(Record)
}

type action struct {
	at    time.Duration
	end   bool
	index int
}

// Run plays the (already scaled) schedule. It returns when every step has been applied and ended, or
// when ctx ends — then every open fault is ended at once (with a fresh context) before Run returns.
// A step that fails to apply is recorded with its error and the run goes on; Run returns the first such
// error so the caller can decide whether the run is still meaningful.
//
// Each moment of the schedule is played at its time, whatever earlier moments are still doing: a step
// whose Apply waits for its consequences (an instance start that retries until Redis answers, a graceful
// stop) never delays a later step, whose time is part of the fault (a Redis restart must end when it is
// written to, even while a start waits for it). Within one moment the steps run one after the other,
// ends before starts and otherwise in schedule order, so a fault written before another at the same
// moment is in effect when the next is applied. A step ends at its time or, when its Apply is still
// running then, as soon as Apply returns.
func (r Runner) Run(ctx context.Context, s Schedule) error {
	var acts []action
	for i, st := range s {
		acts = append(acts, action{at: st.At, index: i})
		if st.For > 0 {
			acts = append(acts, action{at: st.At + st.For, end: true, index: i})
		}
	}
	// Ends before starts at the same instant; otherwise schedule order.
	sort.SliceStable(acts, func(i, j int) bool {
		if acts[i].at != acts[j].at {
			return acts[i].at < acts[j].at
		}
		return acts[i].end && !acts[j].end
	})

	var (
		mu       sync.Mutex
		open     = map[int]func(context.Context) error{}
		recs     = make([]Record, len(s))
		applied  = make([]chan struct{}, len(s))
		firstErr error
	)
	for i := range applied {
		applied[i] = make(chan struct{})
	}
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	finish := func(ctx context.Context, i int) {
		mu.Lock()
		end := open[i]
		delete(open, i)
		mu.Unlock()
		var endErr error
		if end != nil {
			endErr = end(ctx)
		}
		mu.Lock()
		if endErr != nil {
			recs[i].Err = endErr
		}
		recs[i].End = r.Now()
		rec := recs[i]
		mu.Unlock()
		if endErr != nil {
			fail(fmt.Errorf("chaos: end %s: %w", rec.ID, endErr))
		}
		if r.OnEnd != nil {
			r.OnEnd(rec)
		}
	}
	apply := func(ctx context.Context, i int) {
		defer close(applied[i])
		st := s[i]
		rec := Record{ID: fmt.Sprintf("f%d", i+1), Name: st.Fault.Name(), Start: r.Now(), IsFault: isFault(st.Fault)}
		end, a, err := st.Fault.Apply(ctx, r.Env)
		rec.Applied = a
		if err != nil {
			rec.Err = err
			fail(fmt.Errorf("chaos: apply %s (%s): %w", rec.ID, st, err))
		}
		mu.Lock()
		recs[i] = rec
		if end != nil {
			open[i] = end
		}
		mu.Unlock()
		if r.OnApply != nil {
			r.OnApply(rec)
		}
		// An instant step ends at once; so does one that left nothing to end (its Apply failed), so
		// that it is recorded, with its error, whatever its duration.
		if st.For <= 0 || end == nil {
			finish(ctx, i)
		}
	}
	// play runs one moment's actions in order; the first was due before ctx ended, so it runs.
	play := func(ctx context.Context, batch []action) {
		for k, a := range batch {
			if k > 0 && ctx.Err() != nil {
				return
			}
			if !a.end {
				apply(ctx, a.index)
				continue
			}
			select {
			case <-applied[a.index]:
			case <-ctx.Done():
				return
			}
			mu.Lock()
			_, ok := open[a.index]
			mu.Unlock()
			if ok {
				finish(ctx, a.index)
			}
		}
	}

	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		// End whatever is still open, newest first, even though ctx is done.
		ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var idx []int
		for i := range open {
			idx = append(idx, i)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(idx)))
		for _, i := range idx {
			finish(ectx, i)
		}
	}()
	for len(acts) > 0 {
		n := 1
		for n < len(acts) && acts[n].at == acts[0].at {
			n++
		}
		batch := acts[:n]
		acts = acts[n:]
		if wait := batch[0].at - r.Now(); wait > 0 {
			if !r.Sleep(ctx, wait) {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			play(ctx, batch)
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}
