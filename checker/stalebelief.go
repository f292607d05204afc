package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// checkStaleBelief judges each belief against the lease record: an instance that believes it holds an
// endpoint must hold it in Redis. A belief may outlive every value of its holder in the key (expired,
// deleted, wiped) only until the holder can find out, at its next renewal: within a renewal interval and
// a call bound, and the tolerance (figures.staleBelief). Past that, any other instance that tried would
// be granted the endpoint while the holder still believes: two believers, whether or not a second one
// came. A fault outside the assumptions explains the overstay only as far as its magnitude reaches.
//
// Skipped when the system reports no beliefs, or its backend calls are not modelled.
func checkStaleBelief(m *model, opts Options) Result {
	if len(m.beliefs) == 0 {
		return Result{Invariant: InvStaleBelief, Outcome: Skipped, Message: "the system reported no ownership beliefs"}
	}
	if !m.fig.timed {
		return Result{Invariant: InvStaleBelief, Outcome: Skipped, Message: "no renewal interval or call bound was recorded (an older history): nothing to judge a belief's overstay by"}
	}
	bound := m.fig.staleBelief()
	var bad, caught collector
	judged := 0
	for _, ep := range slices.Sorted(maps.Keys(m.beliefs)) {
		if !m.rec.modelled(ep) {
			continue
		}
		vals := m.rec.valuesOf(ep)
		for _, b := range m.believed(ep) {
			var mine []span
			for _, v := range vals {
				if v.writer == b.inst || ownedBy(v.v, b.inst) {
					mine = append(mine, v.alive...)
				}
			}
			mine = mergeSpans(mine)
			judged++
			// The stretches of the belief in which no value of its holder may be in the key.
			for _, gap := range uncovered(span{b.from, b.to}, mine) {
				// A holder whose calls could not complete (paused, stalled, cut off: the history shows
				// its calls unanswered) finds out only once they can: its bound runs from then. But it
				// has its clock: its belief ends by its own lease's end, its last confirmed grant's
				// request + TTL·(1 − drift bound), whatever it cannot hear, or, frozen then, as soon as
				// it runs again (a freeze stops its timers, not its clock).
				from := m.ef.readyWithin(b.inst, gap.from, bound)
				if from > gap.from {
					from = min(from, max(gap.from, m.thawedBy(b.inst, m.leaseEndBefore(b.inst, ep, gap.from))))
				}
				over := gap.to - from - bound
				if over <= 0 {
					continue
				}
				v := Violation{At: from + bound, Endpoint: ep, Instances: []string{b.inst}, Events: []int64{b.startSeq},
					Message: fmt.Sprintf("%s believed it held %s until %v, but from %v no value of its own may have been in the key: it believed %v past it, more than a renewal interval and a call bound (%v) allow (%s)",
						b.inst, ep, round(gap.to), round(gap.from), round(gap.to-gap.from), round(bound), beliefDesc(b))}
				if from > gap.from {
					v.Message += fmt.Sprintf("; its calls could not complete until %v, and the bound counts from then", round(from))
				}
				if o := m.scope.explains(gap.from, gap.to, gap.to-gap.from-bound, b.inst); len(o) > 0 {
					v.Outside = o
					v.Message += "; outside the assumptions (" + strings.Join(o, ", ") + ")"
					caught.add(v)
					continue
				}
				bad.add(v)
			}
		}
	}
	if judged == 0 {
		return Result{Invariant: InvStaleBelief, Outcome: Skipped, Message: "no belief concerns a key whose operations are modelled"}
	}
	return verdict(InvStaleBelief, opts.MaxViolations, &bad, &caught,
		fmt.Sprintf("no belief outlived its holder's value in the key by more than %v (%d beliefs)", round(bound), judged),
		fmt.Sprintf("%d beliefs outlived their holder's value in the key, each explained by a fault outside the system's assumptions", len(caught.list)),
		fmt.Sprintf("%d beliefs outlived their holder's value in the key by more than a renewal interval and a call bound (%v)%s", len(bad.list), round(bound), caughtNote(len(caught.list))))
}

// uncovered returns the parts of s that no span of cover (merged, sorted) covers.
func uncovered(s span, cover []span) []span {
	var out []span
	at := s.from
	for _, c := range cover {
		if c.to <= at {
			continue
		}
		if c.from >= s.to {
			break
		}
		if c.from > at {
			out = append(out, span{at, c.from})
		}
		at = max(at, c.to)
		if at >= s.to {
			return out
		}
	}
	if at < s.to {
		out = append(out, span{at, s.to})
	}
	return out
}

// thawedBy is t, or, when instance in was paused at t, the end of that pause (and of any that follows
// without a break): the first moment from t at which it runs. (A stall hangs its calls, not its timers:
// a stalled holder's belief ends at its deadline all the same.)
func (m *model) thawedBy(in string, t time.Duration) time.Duration {
	ie := m.ef.inst[in]
	if ie == nil {
		return t
	}
	for changed := true; changed; {
		changed = false
		for _, f := range ie.paused {
			if f.from <= t && t < f.to {
				t, changed = f.to, true
			}
		}
	}
	return t
}

// leaseEndBefore is the end of instance in's last confirmed lease of ep that began at or before t (0
// if none did).
func (m *model) leaseEndBefore(in, ep string, t time.Duration) time.Duration {
	var end time.Duration
	for _, w := range m.ls.windows[leaseKey{in, ep}] {
		if w.from <= t {
			end = max(end, w.to)
		}
	}
	return end
}
