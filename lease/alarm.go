package lease

import (
	"sync"
	"time"

	"github.com/tenurelabs/tenure/clock"
)

// takeoverSlack is how long after a key's expiry in Redis a scheduled attempt is sent. Redis stores
// expiry times in milliseconds and, for a key that is read, removes it at the first access at or after
// that millisecond, so one or two milliseconds are enough for the attempt to find the key gone; an
// attempt that comes too early is refused and scheduled again from a fresh PTTL.
const takeoverSlack = 2 * time.Millisecond

// alarm kicks a channel at the earliest time it was armed for, on the manager's clock. Arming it for a
// later time than the one pending changes nothing; once it fires it is disarmed. A spurious kick is
// harmless: every kicked pass reads Redis again before it acts.
type alarm struct {
	clock clock.Clock
	kick  chan struct{} // the channel kicked when the alarm fires
	reset chan struct{} // wakes the loop when an earlier time is armed

	mu sync.Mutex
	at time.Time // zero: disarmed
}

func newAlarm(c clock.Clock, kick chan struct{}) *alarm {
	return &alarm{clock: c, kick: kick, reset: make(chan struct{}, 1)}
}

// arm makes the alarm fire at t, unless it is already armed for an earlier time.
func (a *alarm) arm(t time.Time) {
	a.mu.Lock()
	if !a.at.IsZero() && !t.Before(a.at) {
		a.mu.Unlock()
		return
	}
	a.at = t
	a.mu.Unlock()
	select {
	case a.reset <- struct{}{}:
	default:
	}
}

// set makes the alarm fire at t, replacing the time pending (a zero t disarms it).
func (a *alarm) set(t time.Time) {
	a.mu.Lock()
	a.at = t
	a.mu.Unlock()
	select {
	case a.reset <- struct{}{}:
	default:
	}
}

// pending returns the time the alarm is armed for (zero when disarmed).
func (a *alarm) pending() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.at
}

// run waits for the armed time and kicks, until done is closed.
func (a *alarm) run(done <-chan struct{}) {
	for {
		a.mu.Lock()
		at := a.at
		a.mu.Unlock()
		var fire <-chan time.Time
		var t clock.Timer
		if !at.IsZero() {
			t = a.clock.NewTimer(max(at.Sub(a.clock.Now()), 0))
			fire = t.C()
		}
		select {
		case <-done:
			if t != nil {
				t.Stop()
			}
			return
		case <-a.reset:
			if t != nil {
				t.Stop()
			}
		case <-fire:
			a.mu.Lock()
			if a.at.Equal(at) {
				a.at = time.Time{}
			}
			a.mu.Unlock()
			select {
			case a.kick <- struct{}{}:
			default:
			}
		}
	}
}
