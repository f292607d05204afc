package clock

import (
	"sync"
	"time"
)

// Pausable is a clock that can be stopped as a process is stopped (SIGSTOP, a stop-the-world GC, a VM
// that lost its host for a while). While it is paused:
//
//   - Now blocks until Resume, so a goroutine that reads the time stops at that read;
//   - no timer of this clock fires: a timer that falls due during the pause fires once the clock
//     resumes, as a stopped process handles its expired timers when it runs again;
//   - time itself goes on: after Resume, Now reads the base clock, which has moved on by the length of
//     the pause, so the process sees its clock jump forward.
//
// The harness gives one to each instance, over the instance's Drifting clock.
type Pausable struct {
	base Clock

	mu     sync.Mutex
	paused chan struct{} // closed by Resume; nil while running
}

// NewPausable returns a running clock that reads base.
func NewPausable(base Clock) *Pausable { return &Pausable{base: base} }

// Pause stops the clock. Pausing a paused clock does nothing.
func (p *Pausable) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

// Resume lets every reader and timer waiting on the pause go on. Resuming a running clock does nothing.
func (p *Pausable) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

// Paused reports whether the clock is paused.
func (p *Pausable) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused != nil
}

// wait blocks while the clock is paused, or until stop is closed; it reports whether the clock runs.
func (p *Pausable) wait(stop <-chan struct{}) bool {
	for {
		p.mu.Lock()
		ch := p.paused
		p.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-stop:
			return false
		}
	}
}

// Now returns the base clock's reading, after waiting out a pause.
func (p *Pausable) Now() time.Time {
	p.wait(nil)
	return p.base.Now()
}

// NewTimer returns a timer that fires once d has elapsed on the base clock and the clock is not
// paused. Over Real and Drifting clocks a pending timer is a runtime timer alone (a goroutine waits only
// for a timer that falls due during a pause); over other clocks each pending timer has a goroutine of
// its own that ends when the timer fires or is stopped. The harness's instances create tens of thousands
// of timers a second (one per poll and per renewal of each lease), so a goroutine each is a real share
// of the CPU the instances under test need.
func (p *Pausable) NewTimer(d time.Duration) Timer {
	t := &pausableTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	if af, ok := p.base.(afterFuncer); ok {
		if stop, ok := af.afterFunc(d, func() { t.due(p) }); ok {
			t.stopInner = stop
			return t
		}
	}
	inner := p.base.NewTimer(d)
	t.stopInner = inner.Stop
	go t.run(p, inner)
	return t
}

type pausableTimer struct {
	c         chan time.Time
	stop      chan struct{}
	stopInner func() bool // stops the base clock's timer

	mu   sync.Mutex
	done bool // fired or stopped
}

func (t *pausableTimer) run(p *Pausable, inner Timer) {
	select {
	case <-inner.C():
	case <-t.stop:
		return
	}
	t.due(p)
}

// due runs when the base clock's timer fires: it delivers the time, after the pause if one is on.
func (t *pausableTimer) due(p *Pausable) {
	if p.Paused() {
		go func() {
			if p.wait(t.stop) {
				t.deliver(p)
			}
		}()
		return
	}
	t.deliver(p)
}

func (t *pausableTimer) deliver(p *Pausable) {
	now := p.base.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	t.c <- now // buffered, and sent once
}

func (t *pausableTimer) C() <-chan time.Time { return t.c }

// Stop prevents the timer from firing. It reports true when the timer had not yet delivered its time:
// that includes a timer that fell due during a pause and was waiting for the resume.
func (t *pausableTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	close(t.stop)
	t.stopInner()
	return true
}
