package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Beliefs as the instances reported them, on the harness's time base.

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
