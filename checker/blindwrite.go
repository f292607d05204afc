package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// checkBlindWrites judges what an instance sends after it has seen enough to know that its link to the
// backend is dead, apart from what those writes caused (failover and liveness judge that).
//
// A call of the instance that got no reply (an operation of unknown outcome, not one its own caller
// cancelled) tells the instance, when the call returns its failure (Op.GaveUp; in a history that does not
// record it, by the end of the call bound, Timing.OpTimeout), that what it sends may land unseen. An acquire or renewal (or a plain write of its own bookkeeping, a heartbeat:
// see judgedWrite) it sends after that is blind when, by the time it is sent,
// nothing it sent at or after the unanswered call has been answered, and it goes unanswered itself: no
// reply told the instance its link was back, and none came. A write the instance sent in the race
// between deciding and learning is not blind: one call bound is allowed for it, as the reference's
// link-health logic documents ("calls already past their probe when the link fails may still land"),
// plus FailoverTolerance. A write that was answered is not judged: the link had come back, and the probe
// that may have told the instance so (PING) is not recorded. Releases are never blind: they only delete
// the instance's own holding, and one that lands lets the others in.
//
// Calls made while a stall or a pause held the instance, or while its link was slowed within the call
// bound (from the fault's start until a call bound after its end), are left out: a stalled instance's
// calls neither fail nor return, a frozen one's time out while it cannot act on it, and a slowed link
// still answers (a call may time out behind its slowed neighbours just after a probe was answered). The invariant is skipped on replicated or sharded backends (a link is
// judged per node there), and where no timing or no operation was recorded.
//
// Its verdict rests on timeouts (no reply to the lost call, none to the write), which a starved harness
// or Redis causes as well as a dead link: a blind write that coincided with harness lag above
// LagThreshold is inconclusive (judgeLag), as a timing verdict is.
// blindWriteSchema is the first history schema that records Op.GaveUp.
const blindWriteSchema = 3

func checkBlindWrites(idx *index, opts Options) Result {
	t, ok := timingOf(idx.meta)
	switch {
	case !ok || t.OpTimeout <= 0:
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: "no call bound was recorded (an older history): nothing to judge blind writes by"}
	case idx.meta.Schema > 0 && idx.meta.Schema < blindWriteSchema:
		// Without Op.GaveUp the moment a caller learned of a lost call is a guess: calls with a longer
		// bound than OpTimeout (a discovery round's) would be taken as given up too early.
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: fmt.Sprintf(
			"an older history (schema %d) records no give-up times: nothing to judge blind writes by", idx.meta.Schema)}
	case idx.meta.Assumptions.Topology != "" && idx.meta.Assumptions.Topology != "single":
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: fmt.Sprintf("the backend is %s: a link is judged per node there", idx.meta.Assumptions.Topology)}
	}
	byInst := map[string][]*history.Event{}
	for _, e := range idx.ops {
		if e.Instance != "" {
			byInst[e.Instance] = append(byInst[e.Instance], e)
		}
	}
	if len(byInst) == 0 {
		return Result{Invariant: InvBlindWrite, Outcome: Skipped, Message: "no operation of an instance was recorded: nothing to judge"}
	}
	held := idx.heldWindows(t.OpTimeout)
	slack := t.OpTimeout + FailoverTolerance
	var c collector
	judged := 0
	for _, in := range slices.Sorted(maps.Keys(byInst)) {
		ops := byInst[in]
		slices.SortStableFunc(ops, func(a, b *history.Event) int { return cmp.Compare(a.At, b.At) })
		// answeredFrom[i] is the earliest reply to an operation sent at or after ops[i].At.
		answeredFrom := make([]time.Duration, len(ops)+1)
		answeredFrom[len(ops)] = history.Infinity
		for i := len(ops) - 1; i >= 0; i-- {
			answeredFrom[i] = answeredFrom[i+1]
			if !ops[i].Op.Unknown && ops[i].End != history.Infinity {
				answeredFrom[i] = min(answeredFrom[i], ops[i].End)
			}
		}
		heldIn := func(at time.Duration) bool {
			for _, w := range held[in] {
				if at >= w.From && at <= w.To {
					return true
				}
			}
			return false
		}
		// The instance learned that a call went unanswered when its caller got the failure (GaveUp), or,
		// where that is not recorded, by the end of the call bound; a write is judged one more call bound
		// and the tolerance after that. Calls in order of that moment:
		learned := func(f *history.Event) time.Duration {
			if f.Op.GaveUp > 0 {
				return f.Op.GaveUp
			}
			return f.At + t.OpTimeout
		}
		var lostCalls []int
		for i, f := range ops {
			if unanswered(f) && !heldIn(f.At) {
				lostCalls = append(lostCalls, i)
			}
		}
		slices.SortStableFunc(lostCalls, func(a, b int) int { return cmp.Compare(learned(ops[a]), learned(ops[b])) })
		lost := -1 // the latest-sent unanswered call learned at least slack before the write in hand
		next := 0
		for _, w := range ops {
			for next < len(lostCalls) && learned(ops[lostCalls[next]])+slack <= w.At {
				if lost < 0 || ops[lostCalls[next]].At > ops[lost].At {
					lost = lostCalls[next]
				}
				next++
			}
			if !judgedWrite(w) {
				continue
			}
			judged++
			if lost < 0 || !unanswered(w) || heldIn(w.At) {
				continue
			}
			f := ops[lost]
			// The first of ops sent at or after f: a reply to any of them by the time w was sent
			// told the instance its link was back.
			first := sort.Search(len(ops), func(i int) bool { return ops[i].At >= f.At })
			if answeredFrom[first] <= w.At {
				continue
			}
			// Its window, for the lag pass: from the lost call to the end of the blind write's own
			// call bound. Both verdicts it rests on (no reply to either) are timeouts, which a starved
			// harness or server can cause as well as a dead link.
			c.add(Violation{At: w.At, From: f.At, To: w.At + t.OpTimeout, Endpoint: w.Endpoint, Instances: []string{in}, Events: []int64{f.Seq, w.Seq},
				Message: fmt.Sprintf("%s sent %s of %s at %v, %v after its call at %v (%s) went unanswered past its call bound (%v), with no reply to anything it sent since; it got no reply either",
					in, w.Op.Kind, orKey(w), w.At, round(w.At-f.At), f.At, firstWord(f.Op.Command), t.OpTimeout)})
		}
	}
	return c.result(InvBlindWrite, opts.MaxViolations,
		fmt.Sprintf("no write was sent blind: %d acquires, renewals and heartbeats judged against the instances' unanswered calls (call bound %v)", judged, t.OpTimeout),
		fmt.Sprintf("%d blind writes: a write sent after an unanswered call had shown the link dead, with no reply since", len(c.list)))
}

// judgedWrite reports whether e is a write blind-write judges: an acquire or a renewal, or one of the
// plain commands that write a system's own bookkeeping (a heartbeat, a fleet registry). Deletes and
// announcements are not judged (they only remove what the instance wrote, or tell the others it did),
// nor scripts the system does not classify (they may be reads).
func judgedWrite(e *history.Event) bool {
	switch e.Op.Kind {
	case history.OpAcquire, history.OpRenew:
		return true
	case history.OpOther:
		return writeCommands[firstWord(e.Op.Command)]
	}
	return false
}

// writeCommands are the plain commands that create or extend a key.
var writeCommands = map[string]bool{
	"set": true, "setex": true, "psetex": true, "setnx": true, "getset": true, "expire": true, "pexpire": true,
	"zadd": true, "hset": true, "hmset": true, "hsetnx": true, "sadd": true, "incr": true, "incrby": true,
}

// unanswered reports whether op got no reply, and its caller did not cancel it.
func unanswered(e *history.Event) bool {
	return (e.Op.Unknown || e.End == history.Infinity) && !strings.Contains(e.Op.Err, "context canceled")
}

// heldWindows returns, per instance, the windows in which a stall or a pause held it, each extended by
// grace after the fault's end.
func (idx *index) heldWindows(grace time.Duration) map[string][]history.Window {
	out := map[string][]history.Window{}
	for _, f := range idx.faults {
		switch f.Fault.Name {
		case "stall", "pause", "freeze":
		default:
			// A link slowed within the call bound (latency, replies or requests held less than it)
			// still answers: a call may time out behind its slowed neighbours while the probe that
			// showed the link alive (a PING, not recorded) was answered.
			if !answered(f.Fault, idx.meta) {
				continue
			}
		}
		for _, in := range f.Fault.Targets {
			out[in] = append(out[in], history.Window{From: f.At, To: idx.faultEnd(f) + grace})
		}
	}
	return out
}

func orKey(e *history.Event) string {
	if e.Endpoint != "" {
		return e.Endpoint
	}
	return e.Op.Key
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return strings.ToLower(w)
}
