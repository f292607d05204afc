package lease

import "time"

// Stale values. A call that sets or extends an endpoint's lease with one of our holding values (an
// acquire, a renewal) and gets no usable reply may have landed: the value may be the lease in Redis,
// unbelieved, until it is released or expires. Nobody polls with it, but it refuses the endpoint's
// next owner, so each such value is remembered in its slot until it is known to be gone, and every
// one of them is released: by the endpoint's next acquire attempt (compare-and-delete, in the same
// pipeline, before the acquire); at every acquire pass while the endpoint is assigned to another
// instance (announced, so that its owner, refused by the value, takes it at once); and by Stop.
//
// A slot can hold several: the release of v1 sent with the acquire of v2 can go unanswered as well,
// and then neither is known to be gone. A value is forgotten when
//   - a release of it is answered (deleted, or the lease held something else): it is gone;
//   - an acquire of the endpoint is granted: the lease held none of them at that moment;
//   - it is older than staleFor: it has expired in Redis.
//
// so a slot holds at most one value per failed attempt of the last staleFor, and a failed attempt
// marks the link (or the endpoint's primary) down until a probe is answered, which takes at least
// RenewInterval/2.

// staleValue is one of this instance's earlier holding values that may still be an endpoint's lease
// in Redis.
type staleValue struct {
	value string
	since time.Time // when it became stale, on the manager's clock
}

// staleFor is how long a stale value is remembered: 2*LeaseTTL from the moment the call that could
// have set or extended it ended. Every such call ends (with or without a reply) after it was sent, so
// the lease it may have written expires in Redis at most LeaseTTL of Redis's time later, which is at
// most LeaseTTL/(1-DriftBound) of the manager's clock, below 2*LeaseTTL since DriftBound < 0.5.
func (m *Manager) staleFor() time.Duration { return 2 * m.cfg.LeaseTTL }

// addStale remembers value as stale from now.
func (s *slot) addStale(value string, now time.Time) {
	if value == "" || s.hasStale(value) {
		return
	}
	s.stale = append(s.stale, staleValue{value: value, since: now})
}

func (s *slot) hasStale(value string) bool {
	for _, sv := range s.stale {
		if sv.value == value {
			return true
		}
	}
	return false
}

// forgetStale drops value: it is known to be gone from Redis.
func (s *slot) forgetStale(value string) {
	for i, sv := range s.stale {
		if sv.value == value {
			s.stale = append(s.stale[:i:i], s.stale[i+1:]...)
			return
		}
	}
}

// pruneStaleLocked forgets every stale value that has expired in Redis (staleFor) and the free
// slots left with none. m.mu must be held.
func (m *Manager) pruneStaleLocked() {
	cutoff := m.clock.Now().Add(-m.staleFor())
	for ep, s := range m.slots {
		kept := s.stale[:0]
		for _, sv := range s.stale {
			if !sv.since.Before(cutoff) {
				kept = append(kept, sv)
			}
		}
		clear(s.stale[len(kept):])
		s.stale = kept
		if s.state == epFree && len(s.stale) == 0 {
			delete(m.slots, ep)
		}
	}
}

// staleRelease is the release of one stale value sent before an acquire of its endpoint.
type staleRelease struct {
	value string
	call  *scriptCall
}

// staleLocked returns every stale value of every slot as a holding to release. They stay in their
// slots until a release of each is answered. m.mu must be held.
func (m *Manager) staleLocked() []*holding {
	var out []*holding
	for ep, s := range m.slots {
		out = append(out, staleHoldings(ep, s)...)
	}
	return out
}

// staleHoldings are s's stale values as holdings to release (ep is s's endpoint).
func staleHoldings(ep string, s *slot) []*holding {
	out := make([]*holding, len(s.stale))
	for i, sv := range s.stale {
		out[i] = &holding{endpoint: ep, value: sv.value}
	}
	return out
}
