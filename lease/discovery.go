package lease

import (
	"slices"
	"sync"
	"time"
)

// Coalescing of fleet notifications. Every instance that starts announces itself ("join"), and every
// instance that stops says so ("stop"); each announcement asks every other instance for a discovery
// round. A fleet of N starting together would otherwise run N rounds on each of N instances. The first
// announcement after a quiet spell runs a round at once (a graceful stop's handoff waits for it); the
// ones that follow within joinWindow of it are served by one more round at the end of that window. A
// round asked for while one runs is run once more after it (discoverKick holds one kick). Rounds timed
// by the takeover schedule (fleetWake), the periodic tick and link recovery are never delayed.

// joinWindowDivisor sets the window: DiscoveryInterval/20 (500 ms with the defaults).
const joinWindowDivisor = 20

// joinCoalescer remembers when an announcement last ran a round and whether one is scheduled.
type joinCoalescer struct {
	mu      sync.Mutex
	last    time.Time // when an announcement last kicked a round (manager clock)
	pending bool      // a round is scheduled for the end of the window
}

// announced asks for a discovery round on behalf of a fleet announcement, coalesced as described above.
func (m *Manager) announced() {
	j := &m.joins
	window := m.cfg.DiscoveryInterval / joinWindowDivisor
	j.mu.Lock()
	if j.pending {
		j.mu.Unlock()
		return // the scheduled round will see this announcement too
	}
	now := m.clock.Now()
	if wait := j.last.Add(window).Sub(now); !j.last.IsZero() && wait > 0 {
		j.pending = true
		j.mu.Unlock()
		done := m.runCtx.Done()
		go func() {
			t := m.clock.NewTimer(wait)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C():
				j.mu.Lock()
				j.pending = false
				j.last = m.clock.Now()
				j.mu.Unlock()
				m.kick(m.discoverKick)
			}
		}()
		return
	}
	j.last = now
	j.mu.Unlock()
	m.kick(m.discoverKick)
}

// assignment keeps the last assignment's inputs, so that a round that finds the same fleet and the same
// targets does not compute it again.
type assignment struct {
	insts, targets []string
}

// same reports whether insts and targets (both sorted) are what the last assignment was computed from.
func (a *assignment) same(insts, targets []string) bool {
	return a.insts != nil && slices.Equal(a.insts, insts) && slices.Equal(a.targets, targets)
}
