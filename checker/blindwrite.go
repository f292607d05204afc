package checker

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// blindWriteSchema is the first history schema that records what blind-write rests on: Op.GaveUp, and
// the answers to an instance's link probes (PING), without which a write after an answered probe looks
// blind.
const blindWriteSchema = 4

// checkBlindWrites judges what an instance sends after it has seen enough to know that its link to the
// backend is dead, apart from what those writes caused (the deadlines judge that).
//
// A call of the instance that got no reply (an operation of unknown outcome, not one its own caller
// cancelled) tells the instance, when the call returns its failure (Op.GaveUp; in a history that does
// not record it, by the end of the call bound), that what it sends may land unseen. An acquire or
// renewal (or a plain write of its own bookkeeping, a heartbeat: see writes) it sends after that is
// blind when, by the time it is sent, nothing it sent at or after the unanswered call has been answered
// (a probe answered is an answer: the link is back), and it goes unanswered itself. A write sent in the
// race between deciding and learning is not blind: one call bound and the tolerance are allowed for it.
// Releases are never blind: they only delete the instance's own holding, and one that lands lets the
// others in.
//
// One premise is checked in the history rather than assumed: a lost call whose caller was frozen or
// stalled while it was out (the call overlapped a pause that took hold, or a stall of the instance)
// timed out because the instance could not run, not because its link was dead, and shows nothing.
// A write sent after an unanswered call is a decision, not a timing: harness lag never excuses it. The
// invariant judges a write on a replicated backend only where its primary cannot have changed since the
// lost call, and on a cluster only against lost calls to its own key's slot; it is skipped where no
// timing or no operation was recorded.
func checkBlindWrites(m *model, opts Options) Result {
	fig := m.fig
	switch {
	case !fig.timed || fig.opTimeout <= 0:
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: "no call bound was recorded (an older history): nothing to judge blind writes by"}
	case m.meta.Schema > 0 && m.meta.Schema < blindWriteSchema:
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: fmt.Sprintf(
			"an older history (schema %d) records no give-up times or probe answers: nothing to judge blind writes by", m.meta.Schema)}
	}
	// On a cluster an instance's calls go to the node that serves each key's slot: a call lost on one
	// node shows nothing about another, so a write is judged only against lost calls to its own key's
	// slot (a probe names no key, and shows nothing there), and, as on a replicated backend, only when
	// no promotion, slot migration or other fault that may move the slot lies between.
	cluster := m.meta.Assumptions.Topology == "cluster"
	// On a replicated backend (sentinel) every call goes to the primary; a call lost to one primary shows
	// nothing about the next, so a write is judged only when no promotion, and no fault that may move the
	// primary, lies between the lost call and the write.
	single := m.meta.Assumptions.Topology == "" || m.meta.Assumptions.Topology == "single"
	if len(m.byInst) == 0 {
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: "no operation of an instance was recorded: nothing to judge"}
	}
	slack := fig.opTimeout + FailoverTolerance
	var c collector
	judged := 0
	for _, in := range slices.Sorted(maps.Keys(m.byInst)) {
		ops := m.byInst[in]
		// answeredFrom[i] is the earliest reply to an operation sent at or after ops[i].At.
		answeredFrom := make([]time.Duration, len(ops)+1)
		answeredFrom[len(ops)] = history.Infinity
		for i := len(ops) - 1; i >= 0; i-- {
			answeredFrom[i] = answeredFrom[i+1]
			if !ops[i].Op.Unknown && ops[i].End != history.Infinity {
				answeredFrom[i] = min(answeredFrom[i], ops[i].End)
			}
		}
		frozen := m.frozenSpans(in)
		overlapsFrozen := func(from, to time.Duration) bool {
			for _, s := range frozen {
				if s.from <= to && from <= s.to {
					return true
				}
			}
			return false
		}
		// A freeze explains a call's timeout when it held the instance until the call's give-up was
		// due (its reply, if any, could not be read in time); one that ended sooner handed the reply
		// over with time to spare, and the call was lost on the link.
		heldToGiveUp := func(f *history.Event) bool {
			g := gaveUp(f, fig)
			for _, s := range m.ef.inst[in].frozen() {
				if s.from <= g && s.to+SchedulingAllowance >= min(g, f.At+fig.opTimeout) {
					return true
				}
			}
			return false
		}
		var lostCalls []*history.Event
		for _, f := range ops {
			if unanswered(f) && !heldToGiveUp(f) {
				lostCalls = append(lostCalls, f)
			}
		}
		slices.SortStableFunc(lostCalls, func(a, b *history.Event) int { return cmpDur(gaveUp(a, fig), gaveUp(b, fig)) })
		var lost *history.Event // the latest-sent unanswered call learned at least slack before the write in hand
		bySlot := map[int]*history.Event{}
		next := 0
		for _, w := range ops {
			for next < len(lostCalls) && gaveUp(lostCalls[next], fig)+slack <= w.At {
				l := lostCalls[next]
				if lost == nil || l.At > lost.At {
					lost = l
				}
				if l.Op.Key != "" {
					if sl := HashSlot(l.Op.Key); bySlot[sl] == nil || l.At > bySlot[sl].At {
						bySlot[sl] = l
					}
				}
				next++
			}
			if !writes(w) {
				continue
			}
			judged++
			lost := lost
			if cluster {
				lost = nil
				if w.Op.Key != "" {
					lost = bySlot[HashSlot(w.Op.Key)]
				}
			}
			if lost == nil || !unanswered(w) || overlapsFrozen(w.At, w.At) {
				continue
			}
			first := sort.Search(len(ops), func(i int) bool { return ops[i].At >= lost.At })
			if answeredFrom[first] <= w.At || (!single && m.nodeMayChange(lost.At, w.At)) {
				continue
			}
			c.add(Violation{At: w.At, Endpoint: w.Endpoint, Instances: []string{in}, Events: []int64{lost.Seq, w.Seq},
				Message: fmt.Sprintf("%s sent %s of %s at %v, %v after its call at %v (%s) went unanswered past its call bound (%v), with no reply to anything it sent since; it got no reply either",
					in, w.Op.Kind, orKey(w), w.At, round(w.At-lost.At), lost.At, firstWord(lost.Op.Command), fig.opTimeout)})
		}
	}
	return c.result(InvBlindWrite, opts.MaxViolations,
		fmt.Sprintf("no write was sent blind: %d acquires, renewals and heartbeats judged against the instances' unanswered calls (call bound %v)", judged, fig.opTimeout),
		fmt.Sprintf("%d blind writes: a write sent after an unanswered call had shown the link dead, with no reply since", len(c.list)))
}

// nodeMayChange reports whether the backend's primary may have changed in [from, to]: a promotion was
// noted, or a fault of the backend that may move it (see EffectDataLoss) overlapped it.
func (m *model) nodeMayChange(from, to time.Duration) bool {
	for _, p := range m.promotionTimes() {
		if p >= from && p <= to {
			return true
		}
	}
	for _, fe := range m.faults {
		if EffectOf(fe.Fault) == EffectDataLoss && fe.At <= to && m.faultEnd(fe) >= from {
			return true
		}
	}
	return false
}

// frozenSpans are the stretches in which instance in could not run its calls: paused (from when the
// pause took hold) or stalled, each extended by a call bound (a call that timed out behind the freeze).
func (m *model) frozenSpans(in string) []span {
	ie := m.ef.inst[in]
	if ie == nil {
		return nil
	}
	var out []span
	for _, s := range append(slices.Clone(ie.paused), ie.stalled...) {
		out = append(out, span{s.from, addSat(s.to, m.fig.opTimeout)})
	}
	return out
}

func orKey(e *history.Event) string {
	if e.Endpoint != "" {
		return e.Endpoint
	}
	return e.Op.Key
}
