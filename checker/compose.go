package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// How faults that meet compose (docs/bounds.md, "Faults that meet"): a takeover, a liveness gap or a
// cadence gap is judged against the deadline of what caused it, moved by every other fault that
// hindered the same endpoint.

// composed returns the deadline for endpoint ep after fault fe, whose own deadline is first, given that
// it was taken over by poll to (nil if never). See extended.
func (idx *index) composed(fe *history.Event, first Deadline, ep string, to *history.Event) Deadline {
	stop, taker := idx.end, ""
	if to != nil {
		stop, taker = to.At, to.Instance
	}
	return idx.extended(first, ep, fe.At, stop, taker, fe)
}

// extended returns deadline d for endpoint ep moved by the faults that hindered it: the later of d and
// the deadline of every other fault (not skip) whose window or deadline reaches past since, that began
// before the deadline so far and before stop (when the endpoint was polled again, or the end of the run),
// and that hindered ep.
//
// A backend-wide fault hinders every endpoint (on a Redis Cluster, those on the slots it touched). An
// instance fault hinders ep when it hit an instance that held ep in good standing when it began (see
// heldInStanding): the holder, or a survivor that took ep over and was hit before it could poll; an
// instance that had already stopped polling ep before the fault left ep unpolled on its own, and the
// fault excuses nothing. A slow fault hinders when it hit such a holder or the instance taker that
// polled ep next, and adds its delay; the others move the deadline to theirs. Each fault that moved it
// is named in d.Why, with the deadline it set.
func (idx *index) extended(d Deadline, ep string, since, stop time.Duration, taker string, skip *history.Event) Deadline {
	var slots map[string][]int
	used := map[*history.Event]bool{skip: true}
	// lost are the instances that held ep in good standing when a fault that silenced or blinded them
	// began (the first fault's targets included): such an instance loses its standing to that fault, not
	// on its own, and stays ep's holder of record (see holderOfRecord) until it releases ep or another
	// instance takes it. A later fault on it hinders ep too (a blinded holder that lost its lease and,
	// about to take it again, is stalled: the fleet leaves ep to it until its heartbeat runs out).
	lost := map[string]bool{}
	if skip != nil {
		if c := Classify(skip.Fault, idx.meta); c == ClassSilent || c == ClassBlind {
			for _, t := range skip.Fault.Targets {
				lost[t] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, g := range idx.faults {
			if used[g] || g.At > d.At || g.At >= stop {
				continue
			}
			gd, ok := idx.deadline(g)
			if !ok || gd.Class == ClassNone {
				continue
			}
			// The fault reaches as far as its window, and as far as its own deadline: a kill whose
			// replica is promoted later, a restart whose guard runs a TTL after it.
			if max(idx.faultEnd(g), gd.At) < since {
				continue
			}
			hinders := false
			if idx.backendWideClass(g, gd.Class) {
				hinders = true
				if rs, err := parseSlots(g.Fault.Params[ShardSlotsParam]); err == nil && len(rs) > 0 {
					if slots == nil {
						slots = idx.endpointSlots()
					}
					hinders = false
					for _, s := range slots[ep] {
						hinders = hinders || inSlots(rs, s)
					}
				}
			} else {
				// Standing is judged when the fault took hold (a pause: at the target's next poll).
				at := max(g.At, gd.From)
				for _, t := range g.Fault.Targets {
					standing := idx.heldInStanding(ep, t, at)
					hinders = hinders || standing || (gd.Class == ClassSlow && t == taker)
					if !standing && lost[t] && gd.Class != ClassSlow && idx.holderOfRecord(ep, t, at) {
						hinders = true
						gd.Why += fmt.Sprintf(" (its target lost its standing on %s to an earlier fault and was still its holder of record)", ep)
					}
					if standing && (gd.Class == ClassSilent || gd.Class == ClassBlind) {
						lost[t] = true
					}
				}
				// A handoff while a member of the fleet is removed unseen (a crash before the stop, or
				// one after it that comes before the endpoint was taken) may hand endpoints to that
				// member: the fleet counts it live until its heartbeat runs out, as it counts on its
				// leases, so those endpoints wait for the crash's own deadline. A crash after the
				// takeover, or after the handoff's deadline, is skipped above.
				hinders = hinders || (d.Class == ClassHandoff && gd.Class == ClassGone && g.Fault.Removes)
				if !hinders {
					if lw, ok := idx.blindTaker(g, gd, taker); ok {
						hinders, gd = true, lw
					} else if lw, ok := idx.lateWrite(g, gd, ep); ok {
						hinders, gd = true, lw
					}
				}
			}
			if !hinders {
				continue
			}
			used[g], changed = true, true
			if gd.Class == ClassBlind && answered(g.Fault, idx.meta) {
				// A hold (or a latency) that is blind only for a call that opens a connection, or for a
				// slow trip of its jitter, still delays the calls answered, as a slow fault does; it may
				// also cost the lease, as a blind one does.
				delay, why := slowedBy(g.Fault)
				d.At += delay
				d.Why += fmt.Sprintf("; %s %s, adds %v", g.Fault.ID, why, round(delay))
			}
			if gd.Class == ClassSlow {
				d.At += gd.Delay
				d.Why += fmt.Sprintf("; %s %s adds %v", g.Fault.ID, gd.Why, round(gd.Delay))
			} else if gd.At > d.At {
				d.At = gd.At
				d.Why += fmt.Sprintf("; %s %s hindered it, until %v: %s", g.Fault.ID, g.Fault.Name, round(gd.At), gd.Why)
			}
		}
	}
	return d
}

// blindTaker is the deadline of a blind fault g (replies lost, or requests held past the call bound) on
// the instance taker that took ep over, when it did not hold ep when g began: while g lasts, anything
// the taker sends may land unseen, so a correct system takes nothing over until its link is back, which
// it learns within blind (a renewal or heartbeat interval and a call bound) of g's end; requests it sends
// after g's end are not held. Never beyond g's own deadline in the table.
func (idx *index) blindTaker(g *history.Event, gd Deadline, taker string) (Deadline, bool) {
	if gd.Class != ClassBlind || taker == "" || !toSet(g.Fault.Targets)[taker] {
		return gd, false
	}
	t, ok := timingOf(idx.meta)
	if !ok {
		return gd, false
	}
	gd.At = min(idx.faultEnd(g)+blindWrites(t)+FailoverTolerance, gd.At)
	gd.Why = fmt.Sprintf("%s: it left the instance that took the endpoint over blind (what it sent could land unseen) until its end; a system learns its link is back within a renewal or heartbeat interval and a call bound (%v)",
		g.Fault.Name, blindWrites(t))
	return gd, true
}

// lateWrite is the deadline of a blind slow-requests fault g (requests held past the call bound) on an
// instance that did not hold ep when g began but sent an acquire or renewal of ep during g that got no
// reply: that write may land up to the hold after it was sent, after its sender gave up on it, and hold
// ep in the backend for nobody. Its sender can learn of it only by calling again once its requests pass:
// within blind (a renewal or heartbeat interval and a call bound) of the later of the fault's end and
// the write's landing, and then release it in a few round trips. So it hinders ep until then, never
// beyond the fault's own deadline (the table's, for a holder writing blind, which adds a TTL).
func (idx *index) lateWrite(g *history.Event, gd Deadline, ep string) (Deadline, bool) {
	if gd.Class != ClassBlind || g.Fault.Name != "slow-requests" {
		return gd, false
	}
	t, ok := timingOf(idx.meta)
	if !ok {
		return gd, false
	}
	end, hold := idx.faultEnd(g), paramDur(g.Fault, "delay")
	targets := toSet(g.Fault.Targets)
	var last time.Duration
	found := false
	for _, e := range idx.opsOf(ep) {
		if e.At > end {
			break
		}
		if e.At < g.At || !targets[e.Instance] || (e.Op.Kind != history.OpAcquire && e.Op.Kind != history.OpRenew) {
			continue
		}
		if e.Op.Unknown || e.End == history.Infinity {
			last, found = e.At, true
		}
	}
	if !found {
		return gd, false
	}
	at := min(max(end, last+hold)+blindWrites(t)+FailoverTolerance, gd.At)
	gd.Why = fmt.Sprintf("%s: a write sent during it at %v got no reply and may land %v late, unseen; its sender learns of it within a renewal or heartbeat interval and a call bound (%v) of the later of the fault's end and the landing",
		g.Fault.Name, round(last), round(hold), blindWrites(t))
	gd.At = at
	return gd, true
}

// cadence is how long after a poll's start a holder that keeps the cadence it was given starts the
// next: a poll's duration, a poll interval, and FailoverTolerance.
func (idx *index) cadence() time.Duration {
	var pd time.Duration
	if idx.meta.Timing != nil {
		pd = idx.meta.Timing.PollDuration
	}
	return idx.meta.PollInterval + pd + FailoverTolerance
}

// holderOfRecord reports whether instance in is the last that may hold ep in the backend at t: the last
// acquire or renewal of ep before t that was granted or got no reply is its own, and no release of its
// own was confirmed since.
func (idx *index) holderOfRecord(ep, in string, t time.Duration) bool {
	holder := ""
	for _, e := range idx.opsOf(ep) {
		if e.At > t {
			break
		}
		switch e.Op.Kind {
		case history.OpAcquire, history.OpRenew:
			if e.Op.OK || e.Op.Unknown || e.End == history.Infinity {
				holder = e.Instance
			}
		case history.OpRelease:
			if e.Op.OK && e.Instance == holder && e.End <= t {
				holder = ""
			}
		}
	}
	return holder == in
}

// heldInStanding reports whether instance in held endpoint ep at t and was keeping its cadence: its
// last poll of ep, or its last report that it held ep, came at most a cadence before t.
func (idx *index) heldInStanding(ep, in string, t time.Duration) bool {
	var last time.Duration
	found := false
	polls := idx.polls[ep]
	for i := sort.Search(len(polls), func(i int) bool { return polls[i].At > t }) - 1; i >= 0; i-- {
		if polls[i].Instance == in && reached(polls[i]) {
			last, found = polls[i].At, true
			break
		}
	}
	for _, b := range idx.beliefs[ep] {
		if b.At > t {
			break
		}
		if b.Instance == in && b.Belief.Held && (!found || b.At > last) {
			last, found = b.At, true
		}
	}
	// An acquire or renewal it sent, granted or still unanswered at t, may hold ep in the backend: its
	// sender holds ep as far as anyone else can tell. In a lease fleet an acquire that was refused
	// counts too: its sender was taking ep over (a handoff to it under way), and the fleet leaves ep to
	// it until it acquires or is found dead. In an election every standby is refused at every attempt,
	// which says nothing of who leads.
	refusedCounts := idx.meta.Kind != "election"
	for _, e := range idx.opsOf(ep) {
		if e.At > t {
			break
		}
		if e.Instance != in || (e.Op.Kind != history.OpAcquire && e.Op.Kind != history.OpRenew) {
			continue
		}
		if ((refusedCounts && e.Op.Kind == history.OpAcquire) || e.Op.OK || e.Op.Unknown || e.End > t) && (!found || e.At > last) {
			last, found = e.At, true
		}
	}
	return found && t-last <= idx.cadence()
}

// beliefAt returns the belief event by which one of insts held ep at t (its last report about ep before
// t said it held it, and its deadline, if any, had not passed), or nil.
func (idx *index) beliefAt(ep string, insts map[string]bool, t time.Duration) *history.Event {
	last := map[string]*history.Event{}
	for _, b := range idx.beliefs[ep] {
		if b.At > t {
			break
		}
		if insts[b.Instance] {
			last[b.Instance] = b
		}
	}
	for _, b := range last {
		if b.Belief.Held && (b.Belief.Deadline == 0 || b.Belief.Deadline > t) {
			return b
		}
	}
	return nil
}

// opsOf returns the operations on endpoint ep, in call order.
func (idx *index) opsOf(ep string) []*history.Event {
	if idx.byEp == nil {
		idx.byEp = map[string][]*history.Event{}
		for _, e := range idx.ops {
			if e.Endpoint != "" {
				idx.byEp[e.Endpoint] = append(idx.byEp[e.Endpoint], e)
			}
		}
		for _, ops := range idx.byEp {
			slices.SortStableFunc(ops, func(a, b *history.Event) int { return cmp.Compare(a.At, b.At) })
		}
	}
	return idx.byEp[ep]
}
