package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// checkSinglePoller judges SC-001 per endpoint (per role for elections) over the polls that reached the
// resource:
//
//   - overlap: two polls by different instances whose [At, End] intervals overlap; intervals that only
//     touch (one ends exactly when the next starts) do not overlap;
//   - zombie: a poll by an instance after a different instance with a newer holding has already polled.
//     A holding is newer when its fencing token is higher (both tokens non-zero); without tokens, when it
//     began later, a holding beginning at the instance's latest "held" belief before the poll or, without
//     beliefs, at the first of its uninterrupted run of polls.
//
// Polls refused by fencing never reached the resource: the stale-poll invariant judges them. Each
// offending poll is listed once.
func checkSinglePoller(idx *model, opts Options) Result {
	var bad collector
	zombies := 0
	for _, ep := range idx.pollEndpoints() {
		polls := idx.polls[ep]
		starts := holdingStarts(idx.index, ep, polls)
		var active []*history.Event           // reached polls that may still be running
		newest := map[string]*history.Event{} // per instance, its reached poll with the newest holding
		for _, p := range polls {
			if !reached(p) {
				continue
			}
			kept := active[:0]
			for _, a := range active {
				if pollEnd(a) > p.At {
					kept = append(kept, a)
				}
			}
			active = kept

			var v *Violation
			for _, a := range active {
				if a.Instance != p.Instance && pollEnd(a) > p.At && a.At < pollEnd(p) {
					v = &Violation{At: p.At, Endpoint: ep, Instances: []string{a.Instance, p.Instance},
						Events: []int64{a.Seq, p.Seq}, ReachedResource: true,
						Message: fmt.Sprintf("%s polled %s at %v while %s was still polling it (since %v, until %v)",
							p.Instance, ep, p.At, a.Instance, a.At, pollEnd(a))}
					break
				}
			}
			zombie := false
			if v == nil {
				for _, in := range idx.instances {
					q := newest[in]
					if q != nil && in != p.Instance && newerHolding(q, starts[q], p, starts[p]) {
						v = &Violation{At: p.At, Endpoint: ep, Instances: []string{q.Instance, p.Instance},
							Events: []int64{q.Seq, p.Seq}, ReachedResource: true,
							Message: fmt.Sprintf("zombie poll: %s polled %s at %v (%s) after newer holder %s had polled at %v (%s)",
								p.Instance, ep, p.At, holdingDesc(p, starts[p]), q.Instance, q.At, holdingDesc(q, starts[q]))}
						zombie = true
						break
					}
				}
			}
			if v != nil {
				v.Outside = idx.scope.touchedBy(v.At, pollEnd(p), v.Instances...)
				bad.add(*v)
				if zombie {
					zombies++
				}
			}
			if q, ok := newest[p.Instance]; !ok || newerHolding(p, starts[p], q, starts[q]) {
				newest[p.Instance] = p
			}
			active = append(active, p)
		}
	}

	refusedNote := ""
	if idx.refused > 0 {
		refusedNote = fmt.Sprintf(" (%s refused by fencing judged by %s)", count(idx.refused, "stale poll", "stale polls"), InvStalePoll)
	}
	if len(bad.list) == 0 {
		return Result{Invariant: InvSinglePoller, Outcome: Pass,
			Message: "no endpoint was polled by two holders at once, and no holder polled after a newer one" + refusedNote}
	}
	res := Result{Invariant: InvSinglePoller, Outcome: Violated,
		Message: fmt.Sprintf("%s reached the resource while another instance held the endpoint: %d overlapping another instance's poll, %s after a newer holder%s; see the violations for the polls involved",
			count(len(bad.list), "poll", "polls"), len(bad.list)-zombies, count(zombies, "zombie poll", "zombie polls"), refusedNote)}
	res.Violations, res.Truncated = bad.capped(opts.MaxViolations)
	return res
}

// checkStalePoll judges the polls refused by fencing: each is a stale holder acting after a newer one,
// stopped only at the resource. Inside the system's stated assumptions that must not happen at all, so
// each is a violation; one that a fault outside the assumptions explains (see scope.explains: as far as its
// magnitude reaches, a pause for as long as it lasted) is expected and caught. A history that records no
// assumptions (written before they were recorded) cannot
// say which faults lie outside them: its refusals are caught, as they were judged before, and the message
// says so. Skipped when the resource did not check tokens and refused nothing.
func checkStalePoll(idx *model, opts Options) Result {
	if idx.refused == 0 && !idx.meta.Fencing {
		return Result{Invariant: InvStalePoll, Outcome: Skipped,
			Message: "the resource did not check fencing tokens, so no stale poll could be refused"}
	}
	if idx.refused == 0 && !anyToken(idx) {
		// Without tokens the resource cannot tell a stale poll from a current one: a pass here would
		// say "no stale poll arrived" while single-poller lists zombie polls that did.
		return Result{Invariant: InvStalePoll, Outcome: Skipped,
			Message: "no poll carried a fencing token, so the resource could not tell a stale poll from a current one (single-poller judges the polls that reached it)"}
	}
	var bad, caught collector
	for _, ep := range idx.pollEndpoints() {
		for _, p := range idx.polls[ep] {
			if reached(p) {
				continue
			}
			v := Violation{At: p.At, Endpoint: ep, Instances: []string{p.Instance}, Events: []int64{p.Seq},
				Outside: idx.scope.explains(p.At, pollEnd(p), idx.staleness(p), p.Instance),
				Message: fmt.Sprintf("stale poll by %s with token %d refused by fencing (the resource had seen token %d)",
					p.Instance, p.Poll.Token, p.Poll.MaxToken)}
			switch {
			case len(v.Outside) > 0:
				v.Message += "; expected outside the assumptions (" + strings.Join(v.Outside, ", ") + ")"
				caught.add(v)
			case !idx.scope.recorded:
				v.Message += "; the history records no assumptions, so fencing stopping it is taken as safe"
				caught.add(v)
			default:
				v.Message += "; no fault outside the system's assumptions explains it"
				bad.add(v)
			}
		}
	}
	return verdict(InvStalePoll, opts.MaxViolations, &bad, &caught,
		"no stale poll arrived at the resource",
		fmt.Sprintf("%d stale polls were refused by fencing and reached nothing, %s (caught, safe)", len(caught.list), caughtWhy(idx)),
		fmt.Sprintf("%d stale polls arrived at the resource where the system promises none can (fencing refused them, but a holder acted after a newer one)%s",
			len(bad.list), caughtNote(len(caught.list))))
}

// anyToken reports whether any poll carried a fencing token.
func anyToken(idx *model) bool {
	for _, ps := range idx.polls {
		for _, p := range ps {
			if p.Poll.Token > 0 {
				return true
			}
		}
	}
	return false
}

// holdingStarts returns, for each poll of ep that reached the resource, the time its holding began: the
// latest "held" belief of the polling instance at or before the poll, or else the first poll of its
// uninterrupted run of polls.
func holdingStarts(idx *index, ep string, polls []*history.Event) map[*history.Event]time.Duration {
	out := make(map[*history.Event]time.Duration, len(polls))
	beliefs := idx.beliefs[ep]
	lastHeld := map[string]time.Duration{} // instance -> time of latest held belief seen so far
	runStart := map[string]time.Duration{}
	prevInst := ""
	bi := 0
	for _, p := range polls {
		for bi < len(beliefs) && beliefs[bi].At <= p.At {
			if b := beliefs[bi]; b.Belief.Held {
				lastHeld[b.Instance] = b.At
			}
			bi++
		}
		if !reached(p) {
			continue
		}
		if p.Instance != prevInst {
			runStart[p.Instance] = p.At
			prevInst = p.Instance
		}
		if t, ok := lastHeld[p.Instance]; ok {
			out[p] = t
		} else {
			out[p] = runStart[p.Instance]
		}
	}
	return out
}

// newerHolding reports whether poll q was made under a newer holding than poll p.
func newerHolding(q *history.Event, qStart time.Duration, p *history.Event, pStart time.Duration) bool {
	if q.Poll.Token > 0 && p.Poll.Token > 0 {
		return q.Poll.Token > p.Poll.Token
	}
	return qStart > pStart
}

func holdingDesc(p *history.Event, start time.Duration) string {
	if p.Poll.Token > 0 {
		return fmt.Sprintf("token %d", p.Poll.Token)
	}
	return fmt.Sprintf("holding since %v", start)
}

func caughtWhy(idx *model) string {
	if !idx.scope.recorded {
		return "in a history that records no assumptions, so taken as safe"
	}
	return "each explained by a fault outside the system's assumptions"
}

// staleness is how long after its poller's lease (or, for a system whose calls are not modelled, its
// belief) ended a poll arrived; zero when the history cannot tell.
func (m *model) staleness(p *history.Event) time.Duration {
	if ws := m.ls.windows[leaseKey{p.Instance, p.Endpoint}]; len(ws) > 0 {
		var end time.Duration
		for _, w := range ws {
			if w.from <= p.At {
				end = w.to
			}
		}
		if end > 0 && end < p.At {
			return p.At - end
		}
		if end == 0 {
			return history.Infinity
		}
		return 0
	}
	var end time.Duration
	for _, b := range m.believed(p.Endpoint) {
		if b.inst == p.Instance && b.from <= p.At {
			end = b.to
		}
	}
	if end > 0 && end < p.At {
		return p.At - end
	}
	return 0
}
