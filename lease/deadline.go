package lease

import (
	"time"

	"github.com/tenurelabs/tenure/internal/mutation"
)

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

// validityFor is the manager's validity, with the drift mutant's change when it is switched on.
func (m *Manager) validityFor() time.Duration {
	drift := m.cfg.DriftBound
	if m.cfg.Mutations.Has(mutation.DriftIgnored) {
		drift = 0
	}
	return validity(m.cfg.LeaseTTL, drift, m.cfg.SafetyMargin)
}

// confirm applies confirmedDeadline to a call, counting from its send time (or, in the
// deadline-from-reply mutant, from its reply).
func (m *Manager) confirm(cur time.Time, sc *scriptCall) (time.Time, bool) {
	base := sc.sent
	if m.cfg.Mutations.Has(mutation.DeadlineFromReply) {
		base = sc.replied
	}
	return confirmedDeadline(cur, base, sc.replied, m.validityFor())
}
