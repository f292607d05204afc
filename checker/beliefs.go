package checker

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// olderThan reports whether belief a is the stale one of an overlapping pair: the lower token when both
// have distinct tokens, otherwise the one that began first.
func olderThan(a, b belief) bool {
	if a.token > 0 && b.token > 0 && a.token != b.token {
		return a.token < b.token
	}
	return a.from < b.from
}

// checkSingleHolder judges the belief level of the single-poller property: for one endpoint (or election
// role), no two instances' beliefs that they hold it overlap (see beliefsOf for where a belief ends).
//
// An overlap is a violation when no fault outside the system's stated assumptions explains it. One that
// such a fault explains is expected, and it is caught when no poll of the stale holder (the older
// holding) reached the resource during the overlap: fencing refused its polls, or it made none. One
// whose stale poll reached the resource is a violation whatever the cause. Skipped when the history
// records no beliefs.
func checkSingleHolder(idx *model, opts Options) Result {
	if len(idx.beliefs) == 0 {
		return Result{Invariant: InvSingleHolder, Outcome: Skipped,
			Message: "the system reported no ownership beliefs: only the resource level can be judged"}
	}
	var bad, caught collector
	judged := 0
	for _, ep := range slices.Sorted(maps.Keys(idx.beliefs)) {
		bs := idx.believed(ep)
		judged += len(bs)
		for i := range bs {
			for j := i + 1; j < len(bs) && bs[j].from < bs[i].to; j++ {
				a, b := bs[i], bs[j]
				if a.inst == b.inst || b.from >= a.to {
					continue
				}
				if olderThan(b, a) {
					a, b = b, a
				}
				from, to := max(a.from, b.from), min(a.to, b.to)
				v := Violation{At: from, Endpoint: ep, Instances: []string{a.inst, b.inst},
					Events: []int64{a.startSeq, b.startSeq}}
				reachedN, refusedN := 0, 0
				for _, p := range idx.polls[ep] {
					if p.Instance != a.inst || p.At < from || p.At >= to {
						continue
					}
					if reached(p) {
						reachedN++
					} else {
						refusedN++
					}
					if len(v.Events) < 6 {
						v.Events = append(v.Events, p.Seq)
					}
				}
				v.ReachedResource = reachedN > 0
				// Only a fault on the stale holder (or on the backend, or every instance) explains
				// the overlap, and only as far as its magnitude reaches: a holder that was paused or
				// drifting may keep believing past its lease by the pause, or by the stretch its
				// clock gives a TTL; the newer holder's belief rests on a grant Redis made, so a fault
				// on it alone explains nothing.
				v.Outside = idx.scope.explains(from, to, to-from, a.inst)
				v.Message = fmt.Sprintf("%s and %s both believed they held %s for %v [%v, %v]: %s, %s; the stale holder %s",
					a.inst, b.inst, ep, to-from, from, to, beliefDesc(a), beliefDesc(b), a.inst)
				switch {
				case reachedN > 0:
					v.Message += fmt.Sprintf(" polled it %d times and reached the resource", reachedN)
				case refusedN > 0:
					v.Message += fmt.Sprintf(" polled it %d times, every poll refused by fencing", refusedN)
				default:
					v.Message += " did not poll it"
				}
				if len(v.Outside) == 0 {
					v.Message += "; no fault outside the system's assumptions explains it"
					if o := idx.scope.touchedBy(from, to, a.inst); len(o) > 0 {
						v.Message += " (" + strings.Join(o, ", ") + " lay outside them, but cannot account for an overlap of " + round(to-from).String() + ")"
					}
					bad.add(v)
					continue
				}
				v.Message += "; outside the assumptions (" + strings.Join(v.Outside, ", ") + ")"
				if reachedN > 0 {
					bad.add(v)
				} else {
					caught.add(v)
				}
			}
		}
	}
	return verdict(InvSingleHolder, opts.MaxViolations, &bad, &caught,
		fmt.Sprintf("no two instances believed they held one endpoint at once (%d beliefs)", judged),
		fmt.Sprintf("%d times two instances believed they held one endpoint at once, each explained by a fault outside the system's assumptions, and no stale poll reached the resource (expected and caught)", len(caught.list)),
		fmt.Sprintf("%d times two instances believed they held one endpoint at once where the system promises it cannot happen (inside its assumptions, or a stale poll reached the resource)%s",
			len(bad.list), caughtNote(len(caught.list))))
}

func caughtNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d more outside the assumptions were caught", n)
}
