package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// belief is one holding as its instance believed it, on the harness's time base: [from, to).
type belief struct {
	inst          string
	token         uint64
	from, to      time.Duration
	startSeq      int64
	endSeq        int64  // the event that ended it, 0 when it ended at a deadline, crash, stop or the run's end
	ended         string // why it ended, for the reader
	renewals      int
	deadline      time.Duration // the latest recorded deadline, 0 for none
	deadlineLapse bool
}

// beliefsOf rebuilds the beliefs about endpoint ep. A belief begins at a held event and ends at the first
// of: a held=false event of its instance, the instance's crash or stop (or a fault removing it, or the
// end of the run), or its recorded deadline. A held event with the belief's own token extends it (a
// confirmed renewal moves the deadline; one recorded without a deadline leaves none); a held event with
// another token ends it and begins a new one. Histories recorded without deadlines therefore end
// beliefs only at explicit events, crashes, stops and the end of the run.
func beliefsOf(idx *index, ep string) []belief {
	var out []belief
	open := map[string]*belief{}
	finish := func(b *belief, at time.Duration, seq int64, why string) {
		b.to, b.endSeq, b.ended = at, seq, why
		if b.deadline > 0 && b.deadline < at {
			b.to, b.endSeq, b.ended, b.deadlineLapse = b.deadline, 0, "its deadline", true
		}
		if lu := idx.liveUntil(b.inst, b.from); lu < b.to {
			b.to, b.endSeq, b.ended, b.deadlineLapse = lu, 0, "the instance's crash, stop or the run's end", false
		}
		if b.to < b.from {
			b.to = b.from
		}
		out = append(out, *b)
		delete(open, b.inst)
	}
	for _, e := range idx.beliefs[ep] {
		bl := e.Belief
		cur := open[e.Instance]
		if cur != nil {
			lapsed := (cur.deadline > 0 && cur.deadline < e.At) || idx.liveUntil(cur.inst, cur.from) < e.At
			switch {
			case lapsed:
				finish(cur, e.At, e.Seq, "")
				cur = nil
			case !bl.Held:
				finish(cur, e.At, e.Seq, reasonOr(bl.Reason, "ended"))
				continue
			case bl.Token == cur.token:
				// A confirmed renewal: a later deadline extends the belief; one reported without a
				// deadline leaves it with none.
				if bl.Deadline == 0 || bl.Deadline > cur.deadline {
					cur.deadline = bl.Deadline
				}
				cur.renewals++
				continue
			default:
				finish(cur, e.At, e.Seq, fmt.Sprintf("a new holding with token %d", bl.Token))
				cur = nil
			}
		}
		if cur == nil && bl.Held {
			open[e.Instance] = &belief{inst: e.Instance, token: bl.Token, from: e.At, startSeq: e.Seq, deadline: bl.Deadline}
		}
	}
	for _, in := range slices.Sorted(maps.Keys(open)) {
		finish(open[in], idx.end, 0, "the run's end")
	}
	slices.SortFunc(out, func(a, b belief) int { return cmp.Compare(a.from, b.from) })
	return out
}

func reasonOr(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

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
func checkSingleHolder(idx *index, opts Options) Result {
	if len(idx.beliefs) == 0 {
		return Result{Invariant: InvSingleHolder, Outcome: Skipped,
			Message: "the system reported no ownership beliefs: only the resource level can be judged"}
	}
	var bad, caught collector
	judged := 0
	for _, ep := range slices.Sorted(maps.Keys(idx.beliefs)) {
		bs := beliefsOf(idx, ep)
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
				// the overlap: a holder that was paused or drifting may keep believing past its
				// lease, but the newer holder's belief rests on a grant Redis made, so a fault on it
				// alone explains nothing (a paused instance that wakes and acquires a key deleted
				// under its older holder is that holder's fault).
				v.Outside = idx.scope.involved(from, to, a.inst)
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

func beliefDesc(b belief) string {
	s := fmt.Sprintf("%s's belief", b.inst)
	if b.token > 0 {
		s += fmt.Sprintf(" (token %d)", b.token)
	}
	s += fmt.Sprintf(" from %v", b.from)
	if b.renewals > 0 {
		s += fmt.Sprintf(", renewed %d times", b.renewals)
	}
	if b.ended != "" {
		s += " until " + b.ended
	}
	return s
}
