// Package clock is the one source of time for Tenure's lease manager, leader election and harness.
//
// Every component that measures time takes a Clock, so a test or the simulator can run it on a clock
// that drifts, jumps or is driven by hand. Real is the default. Drifting runs faster or slower than real
// time by a fixed rate and is what the harness gives an instance to model a bad oscillator.
//
// Clock.Now must be monotonic for deadline arithmetic: Real returns time.Now() (which carries a monotonic
// reading), and Drifting derives its readings from it.
package clock

import (
	"sync"
	"time"
)

// Clock is a source of time. Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time on this clock.
	Now() time.Time
	// NewTimer returns a timer that fires after d has elapsed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Clock hands out.
type Timer interface {
	// C delivers the clock's time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped a pending timer.
	Stop() bool
}

// Since returns the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Sleep blocks for d on clock c, or until done is closed. It reports whether the full duration elapsed.
func Sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-done:
		return false
	}
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// afterFunc runs f in its own goroutine once d has elapsed (time.AfterFunc).
func (Real) afterFunc(d time.Duration, f func()) (func() bool, bool) {
	return time.AfterFunc(d, f).Stop, true
}

// afterFuncer is a clock that can run a function once a duration has elapsed on it, with no
// goroutine waiting meanwhile; stop prevents the call and reports whether it did. ok is false when
// the clock cannot (a Drifting clock over a base that cannot). Pausable uses it for its timers.
type afterFuncer interface {
	afterFunc(d time.Duration, f func()) (stop func() bool, ok bool)
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Drifting is a clock whose time advances at Rate times real time, starting from the real time at which
// it was created. A rate of 1.001 gains one millisecond per real second. The rate can be
// changed at run time; readings stay continuous across a change.
type Drifting struct {
	base Clock

	mu      sync.Mutex
	rate    float64
	anchorR time.Time // base reading at the last rate change
	anchorL time.Time // local reading at the last rate change
}

// NewDrifting returns a clock running at rate times the speed of base. rate must be positive.
func NewDrifting(base Clock, rate float64) *Drifting {
	if rate <= 0 {
		panic("clock: drifting rate must be positive")
	}
	now := base.Now()
	return &Drifting{base: base, rate: rate, anchorR: now, anchorL: now}
}

// Rate returns the current rate.
func (d *Drifting) Rate() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rate
}

// SetRate changes the rate from now on. rate must be positive.
func (d *Drifting) SetRate(rate float64) {
	if rate <= 0 {
		panic("clock: drifting rate must be positive")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.base.Now()
	d.anchorL = d.localAt(r)
	d.anchorR = r
	d.rate = rate
}

// Now returns the drifting reading.
func (d *Drifting) Now() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.localAt(d.base.Now())
}

func (d *Drifting) localAt(r time.Time) time.Time {
	elapsed := r.Sub(d.anchorR)
	return d.anchorL.Add(time.Duration(float64(elapsed) * d.rate))
}

// NewTimer fires once d has elapsed on this clock, i.e. after d/rate of base time. A rate change while
// the timer is pending does not re-aim it; timers in Tenure are short relative to any drift change.
func (d *Drifting) NewTimer(dur time.Duration) Timer {
	rate := d.Rate()
	return d.base.NewTimer(time.Duration(float64(dur) / rate))
}

// afterFunc is NewTimer's schedule with a function instead of a channel, when the base clock has one.
func (d *Drifting) afterFunc(dur time.Duration, f func()) (func() bool, bool) {
	af, ok := d.base.(afterFuncer)
	if !ok {
		return nil, false
	}
	return af.afterFunc(time.Duration(float64(dur)/d.Rate()), f)
}
