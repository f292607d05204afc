package checker

import (
	"slices"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// When what an instance sent may have reached the backend.

// landing returns the latest moment op e may have taken effect in the backend, and false when it cannot
// have taken effect at all. An answered op took effect before its reply came; one whose landing the
// harness saw (Op.Landed) took effect then. An unanswered one may have been sent, or sent again by its
// client, until its caller gave up, and each request may have been delayed by what held its link
// (a hold lands it the hold's delay later, a latency half a round trip later, a frozen backend applies
// it when it resumes); a request sent while its link dropped everything, or while the backend was
// down, never lands.
func (ef *effects) landing(e *history.Event) (time.Duration, bool) {
	switch {
	case e.Op.Landed > 0 && !unanswered(e) && e.End != history.Infinity:
		// Answered, and one of its sends (a client's re-send) was seen landing: the later of the two.
		return max(e.Op.Landed, e.End), true
	case e.Op.Landed > 0:
		return e.Op.Landed, true
	case !unanswered(e) && e.End != history.Infinity:
		return ef.answeredLanding(e), true
	}
	from, to := e.At, gaveUp(e, ef.idx.fig)
	if ef.dropped(e.Instance, from, to) {
		return 0, false
	}
	land := to
	// Sent at some moment from its call to its give-up, a request lands by that moment and what its
	// link held it for then: at the latest send, or at the last moment the fault itself held it.
	for _, w := range ef.links[e.Instance] {
		if w.req > 0 && w.from <= to && from < w.to {
			hi := min(to, w.to)
			land = max(land, hi+ef.reqDelay(e.Instance, w, e.Op.Command, true, hi))
			if s := min(hi, w.until); s >= max(from, w.from) {
				land = max(land, s+ef.reqDelay(e.Instance, w, e.Op.Command, true, s))
			}
		}
	}
	for _, b := range ef.backend {
		if b.frozen && b.from <= land && from < b.to {
			land = max(land, b.to)
		}
	}
	return land, true
}

// answeredLanding is the latest moment answered op e may have taken effect: by its reply, and, when its
// reply was held because its instance froze or stalled while the call was out, by the freeze's start
// plus what its link then delayed a request by (a frozen instance sends nothing, a stalled one blocks its
// calls before sending them: the request had left before; only its reply waited). A frozen backend
// applies it when it resumes.
func (ef *effects) answeredLanding(e *history.Event) time.Duration {
	land := max(e.End, e.At)
	ie := ef.inst[e.Instance]
	if ie == nil {
		return land
	}
	for _, s := range append(slices.Clone(ie.paused), ie.stalled...) {
		if s.from < e.At || s.from > e.End {
			continue
		}
		at := s.from + max(ef.requestDelay(e.Instance, e.At), ef.requestDelay(e.Instance, s.from)) + SchedulingAllowance
		for _, b := range ef.backend {
			if b.frozen && b.from <= at && e.At < b.to {
				at = max(at, b.to)
			}
		}
		land = min(land, at)
	}
	return land
}

// dropped reports whether nothing instance in sent in [from, to] can have landed: its link dropped every
// request, or the backend was down, from before from (by a scheduling allowance, for a request already on
// its way) until after to.
func (ef *effects) dropped(in string, from, to time.Duration) bool {
	for _, w := range ef.links[in] {
		if w.mute && w.from+SchedulingAllowance <= from && to <= w.to {
			return true
		}
	}
	for _, b := range ef.backend {
		if !b.frozen && b.slots == nil && b.from+SchedulingAllowance <= from && to <= b.to {
			return true
		}
	}
	return false
}

// earliest returns the earliest moment op e may have taken effect in the backend (with landing, the
// window in which it may have): an answered op, or one the harness saw land, at its call or its landing;
// an unanswered one no sooner than the least delay its link then imposed (a hold delays every request it
// holds by its delay, a latency by its fastest one-way trip; a request sent again after the fault ended
// is not delayed), nor before a frozen backend resumed.
func (ef *effects) earliest(e *history.Event) time.Duration {
	switch {
	case !unanswered(e) && e.End != history.Infinity:
		return e.At
	case e.Op.Landed > 0:
		return e.Op.Landed
	}
	from, to := e.At, gaveUp(e, ef.idx.fig)
	var d time.Duration
	for _, w := range ef.links[e.Instance] {
		if w.fastReq > 0 && w.from <= from && from < w.until {
			d = max(d, w.fastReq)
		}
	}
	at := from + d
	for _, w := range ef.links[e.Instance] {
		if w.fastReq > 0 && from < w.until && w.until <= to {
			at = min(at, w.until) // sent again once the fault was over
		}
	}
	for _, b := range ef.backend {
		if b.frozen && b.from <= from && to <= b.to {
			at = max(at, b.to)
		}
	}
	return at
}
