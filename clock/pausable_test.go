package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
)

// driven is a base clock whose time and timers move only when the test advances it.
type driven struct {
	mu     sync.Mutex
	now    time.Time
	timers []*drivenTimer
}

type drivenTimer struct {
	at      time.Time
	c       chan time.Time
	stopped bool
}

func (t *drivenTimer) C() <-chan time.Time { return t.c }
func (t *drivenTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

func (d *driven) Now() time.Time { d.mu.Lock(); defer d.mu.Unlock(); return d.now }

func (d *driven) NewTimer(dur time.Duration) clock.Timer {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := &drivenTimer{at: d.now.Add(dur), c: make(chan time.Time, 1)}
	d.timers = append(d.timers, t)
	return t
}

func (d *driven) advance(dur time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.now = d.now.Add(dur)
	for _, t := range d.timers {
		if !t.stopped && !t.at.After(d.now) {
			t.stopped = true
			t.c <- d.now
		}
	}
}

// quiet is how long a test watches for something that must not happen. A wrong implementation fails
// within it; a right one passes however loaded the machine is.
const quiet = 100 * time.Millisecond

func TestPausableNowBlocksUntilResumeAndJumps(t *testing.T) {
	base := &driven{now: time.Unix(1000, 0)}
	p := clock.NewPausable(base)
	require.Equal(t, time.Unix(1000, 0), p.Now())

	p.Pause()
	require.True(t, p.Paused())
	read := make(chan time.Time, 1)
	go func() { read <- p.Now() }()
	require.Never(t, func() bool { return len(read) > 0 }, quiet, time.Millisecond, "Now must block while paused")

	base.advance(45 * time.Second) // real time goes on during the pause
	p.Resume()
	var got time.Time
	require.Eventually(t, func() bool {
		select {
		case got = <-read:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, time.Unix(1045, 0), got, "on waking the clock has jumped by the pause")
	require.False(t, p.Paused())
}

func TestPausableTimerDueDuringPauseFiresAfterResume(t *testing.T) {
	base := &driven{now: time.Unix(0, 0)}
	p := clock.NewPausable(base)
	tm := p.NewTimer(5 * time.Second)

	p.Pause()
	base.advance(10 * time.Second) // the timer falls due while paused
	require.Never(t, func() bool { return len(tm.C()) > 0 }, quiet, time.Millisecond, "no timer fires during a pause")

	base.advance(5 * time.Second)
	p.Resume()
	select {
	case at := <-tm.C():
		require.Equal(t, time.Unix(15, 0), at, "the timer delivers the time of waking")
	case <-time.After(10 * time.Second):
		t.Fatal("the timer never fired after the resume")
	}
	require.False(t, tm.Stop(), "a fired timer is not pending")
}

func TestPausableTimerFiresNormallyWhileRunning(t *testing.T) {
	base := &driven{now: time.Unix(0, 0)}
	p := clock.NewPausable(base)
	tm := p.NewTimer(time.Second)
	base.advance(time.Second)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the timer never fired")
	}
}

func TestPausableTimerStoppedDuringPauseNeverFires(t *testing.T) {
	base := &driven{now: time.Unix(0, 0)}
	p := clock.NewPausable(base)
	tm := p.NewTimer(time.Second)
	p.Pause()
	base.advance(2 * time.Second)
	require.True(t, tm.Stop(), "a timer held by the pause is still pending")
	require.False(t, tm.Stop())
	p.Resume()
	require.Never(t, func() bool { return len(tm.C()) > 0 }, quiet, time.Millisecond)
}

func TestPausableOverDriftingKeepsTheRate(t *testing.T) {
	base := &driven{now: time.Unix(0, 0)}
	d := clock.NewDrifting(base, 2)
	p := clock.NewPausable(d)
	start := p.Now()
	p.Pause()
	base.advance(10 * time.Second)
	p.Resume()
	require.Equal(t, 20*time.Second, p.Now().Sub(start))
}

func TestPausableResumeAndPauseAreIdempotent(t *testing.T) {
	p := clock.NewPausable(clock.Real{})
	p.Resume()
	p.Pause()
	p.Pause()
	p.Resume()
	p.Resume()
	require.False(t, p.Paused())
	_ = p.Now()
}

// Over the real clock (and a drifting one over it) a pending timer has no goroutine of its own; the
// pause must hold it all the same.
func TestPausableOverRealClockHoldsTimersDuringPause(t *testing.T) {
	for name, base := range map[string]clock.Clock{"real": clock.Real{}, "drifting": clock.NewDrifting(clock.Real{}, 1.01)} {
		t.Run(name, func(t *testing.T) {
			p := clock.NewPausable(base)
			running := p.NewTimer(time.Millisecond)
			select {
			case <-running.C():
			case <-time.After(10 * time.Second):
				t.Fatal("the timer never fired while the clock ran")
			}
			require.False(t, running.Stop(), "a fired timer is not pending")

			p.Pause()
			held := p.NewTimer(time.Millisecond)
			stopped := p.NewTimer(time.Millisecond)
			require.Never(t, func() bool { return len(held.C())+len(stopped.C()) > 0 }, quiet, time.Millisecond,
				"no timer fires during a pause")
			require.True(t, stopped.Stop(), "a timer held by the pause is still pending")
			p.Resume()
			select {
			case <-held.C():
			case <-time.After(10 * time.Second):
				t.Fatal("the timer held by the pause never fired after the resume")
			}
			require.Never(t, func() bool { return len(stopped.C()) > 0 }, quiet, time.Millisecond,
				"a timer stopped during the pause never fires")
		})
	}
}
