package lease

import "time"

// validity is how long a confirmation is believed, counted from its base time (the send time of the
// request it answers): LeaseTTL shrunk by the drift bound, less the safety margin. Redis counts the
// key's TTL from when it executed the request, which is after the send; a local clock running up to
// drift slower than Redis's sees at most TTL*(1-drift) of that TTL elapse.
func validity(ttl time.Duration, drift float64, margin time.Duration) time.Duration {
	return time.Duration(float64(ttl)*(1-drift)) - margin
}

// confirmedDeadline is the local deadline after a grant or renewal confirmed by a request sent at sent
// whose reply arrived at replied, given the holding's current deadline cur (zero for a fresh grant).
// ok is false when the reply came too late to count: at or after the current deadline (the belief had
// already ended), or at or after the deadline it would set. A confirmation never moves a deadline
// back: a late reply to an older request cannot shorten nor, being counted from its own send time,
// extend the belief beyond what that request proves.
func confirmedDeadline(cur, sent, replied time.Time, valid time.Duration) (deadline time.Time, ok bool) {
	if !cur.IsZero() && !replied.Before(cur) {
		return cur, false
	}
	nd := sent.Add(valid)
	if !replied.Before(nd) {
		return cur, false
	}
	if nd.After(cur) {
		return nd, true
	}
	return cur, true
}

// validityFor is the manager's validity.
func (m *Manager) validityFor() time.Duration {
	return validity(m.cfg.LeaseTTL, m.driftBound(), m.cfg.SafetyMargin)
}

// confirm applies confirmedDeadline to a call, counting from its send time.
func (m *Manager) confirm(cur time.Time, sc *scriptCall) (time.Time, bool) {
	return confirmedDeadline(cur, m.countsFrom(sc), sc.replied, m.validityFor())
}
