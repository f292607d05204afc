package checker

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// What happened to each instance, read off its own calls and the lifecycle: when it could not complete a
// call (impeded), when it could act again (ready), how long the others counted it a member (present).

// instEffects is what happened to one instance.
type instEffects struct {
	start    time.Duration // when it joined the fleet
	gone     time.Duration // when it left for good; history.Infinity if it never did
	graceful bool          // it left by a graceful stop
	// cutOff is set for a graceful stop whose releases and departure could not land: its link dropped
	// every request from before it stopped until past its release (releaseBy). The others then learn
	// of its departure as of a crash's, and its values run out their TTL.
	cutOff  bool
	goneBy  *history.Event
	paused  []span
	stalled []span
	failed  []*history.Event // its calls that went unanswered
	// impeded are the stretches in which it could not complete a call: paused, stalled, and from each
	// unanswered call of its own to the end of what explains it (the fault window on its link or the
	// backend that covered the call, else the moment its caller gave up), or to the first answer to a
	// call it sent since, if that came sooner: an answer shows its calls completed again. Merged.
	impeded []span
	// present are the stretches in which the others may count it a member: from the earliest landing of
	// each write of its own (its heartbeat, any key it writes) to a heartbeat TTL after its latest. Merged.
	present []span
	// lastWrite is the latest moment any write it sent may have reached the backend.
	lastWrite time.Duration
}

// frozen returns the stretches in which the instance could not run its calls: paused (from when the
// pause took hold) or stalled.
func (ie *instEffects) frozen() []span {
	return append(slices.Clone(ie.paused), ie.stalled...)
}

// readCalls finds each instance's unanswered calls and the latest landing of its writes, and derives
// when it was impeded.
func (ef *effects) readCalls() {
	idx := ef.idx
	for in, ie := range ef.inst {
		for _, e := range idx.byInst[in] {
			if unanswered(e) && ef.showsImpediment(in, e) {
				ie.failed = append(ie.failed, e)
			}
			if writes(e) && !refused(e) {
				if l, ok := ef.landing(e); ok {
					ie.lastWrite = max(ie.lastWrite, l)
					ie.present = append(ie.present, span{ef.earliest(e), l + ef.idx.fig.heartbeatTTL + ExpiryTick})
				}
			}
		}
		var imp []span
		imp = append(imp, ie.paused...)
		imp = append(imp, ie.stalled...)
		answers := answersFrom(idx.byInst[in])
		for _, c := range ie.failed {
			from, to := ef.explained(in, c)
			if a := answers(c.At); a < to {
				to = max(a, gaveUp(c, idx.fig))
			}
			imp = append(imp, span{from, to})
		}
		ie.impeded = mergeSpans(imp)
		ie.present = mergeSpans(ie.present)
	}
}

// showsImpediment reports whether unanswered call c of instance in shows that the instance could not
// complete a call: its caller waited for it the call bound (less the scheduling allowance), or a fault
// on its link, on the backend, or a freeze of the instance lay over it. A call its own caller gave up on
// sooner, with nothing in the way, shows only that the system cut it short: the system cannot make
// its own excuse.
func (ef *effects) showsImpediment(in string, c *history.Event) bool {
	g := gaveUp(c, ef.idx.fig)
	if g-c.At >= ef.idx.fig.opTimeout-SchedulingAllowance {
		return true
	}
	for _, w := range ef.links[in] {
		if w.from <= g && c.At <= w.to {
			return true
		}
	}
	for _, b := range ef.backend {
		if b.from <= g && c.At <= b.to && b.reaches(c) {
			return true
		}
	}
	for _, s := range ef.inst[in].frozen() {
		if s.from <= g && c.At <= s.to {
			return true
		}
	}
	return false
}

// explained is the stretch in which an unanswered call c of instance in shows it could not complete a
// call: the whole window of the fault on its link or on the backend that covered the call (a partition,
// a hold, a restart: the call shows the fault reached it), else from the call until its caller gave up.
func (ef *effects) explained(in string, c *history.Event) (time.Duration, time.Duration) {
	from, end := c.At, gaveUp(c, ef.idx.fig)
	for _, w := range ef.links[in] {
		if w.from <= end && c.At <= w.to {
			from, end = min(from, w.from), max(end, w.to)
		}
	}
	for _, b := range ef.backend {
		if b.from <= end && c.At <= b.to && b.reaches(c) {
			from, end = min(from, b.from), max(end, b.to)
		}
	}
	return from, end
}

// reaches reports whether the backend fault of w can have held call c: it concerns every key, or c's
// key lies in the slots it concerns (a call that names no key, a probe, may have gone to any node). A
// fault of one shard holds no call to another.
func (w backendWindow) reaches(c *history.Event) bool {
	return c.Op.Key == "" || touches(w.slots, c.Op.Key)
}

// answersFrom returns, for one instance's ops (in call order), the earliest reply to a call sent at or
// after a given moment (history.Infinity when none came).
func answersFrom(ops []*history.Event) func(t time.Duration) time.Duration {
	first := make([]time.Duration, len(ops)+1)
	first[len(ops)] = history.Infinity
	for i := len(ops) - 1; i >= 0; i-- {
		first[i] = first[i+1]
		if answered(ops[i]) {
			first[i] = min(first[i], ops[i].End)
		}
	}
	return func(t time.Duration) time.Duration {
		return first[sort.Search(len(ops), func(i int) bool { return ops[i].At >= t })]
	}
}

// answered reports whether op e got a reply (a refusal and an error reply are replies: the call
// completed).
func answered(e *history.Event) bool { return !e.Op.Unknown && e.End != history.Infinity }

// gaveUp is when the caller of an unanswered call got its failure: recorded (Op.GaveUp), or its answer
// (an error that was no reply), or else the call bound after the call.
func gaveUp(c *history.Event, fig figures) time.Duration {
	switch {
	case c.Op.GaveUp > 0:
		return c.Op.GaveUp
	case c.End != history.Infinity && c.End >= c.At:
		return c.End
	}
	return c.At + fig.opTimeout
}

// unanswered reports whether op e got no reply, and its caller did not cancel it.
func unanswered(e *history.Event) bool {
	return (e.Op.Unknown || e.End == history.Infinity) && !strings.Contains(e.Op.Err, "context canceled")
}

// writes reports whether op e may write a key: an acquire or a renewal, or a plain command that creates
// or extends a key (the instance's heartbeat, its registry entry).
func writes(e *history.Event) bool {
	switch e.Op.Kind {
	case history.OpAcquire, history.OpRenew:
		return true
	case history.OpOther:
		return writeCommands[firstWord(e.Op.Command)]
	}
	return false
}

// refused reports whether op e, an acquire or a renewal, was answered with a refusal: it wrote nothing
// (a refused SET NX, a renewal that found the key gone or another's), so it keeps no key alive and
// counts its sender a member of nothing.
func refused(e *history.Event) bool {
	return (e.Op.Kind == history.OpAcquire || e.Op.Kind == history.OpRenew) && !e.Op.OK && !unanswered(e) && e.Op.Err == ""
}

// writeCommands are the plain commands that create or extend a key.
var writeCommands = map[string]bool{
	"set": true, "setex": true, "psetex": true, "setnx": true, "getset": true, "expire": true, "pexpire": true,
	"zadd": true, "hset": true, "hmset": true, "hsetnx": true, "sadd": true, "incr": true, "incrby": true,
}

// ready is the earliest moment at or after t at which instance in has been a live member of the fleet,
// unimpeded, for the system's detection latency: the time it needs to learn what only a call can show
// (that its link is back, that it joined a fleet). history.Infinity when it never is.
func (ef *effects) ready(in string, t time.Duration) time.Duration {
	ie := ef.inst[in]
	if ie == nil {
		return history.Infinity
	}
	d := ef.idx.fig.detect()
	x := max(t, ie.start+d)
	for changed := true; changed; {
		changed = false
		for _, s := range ie.impeded {
			if s.from < x && s.to > x-d {
				if s.to == history.Infinity {
					return history.Infinity
				}
				x, changed = s.to+d, true
			}
		}
	}
	if x >= ie.gone {
		return history.Infinity
	}
	return x
}

// readyWithin is the last moment at or after t at which instance in could complete calls again after
// being impeded, without the detection latency: the end of the impeded stretch that contains t (t
// itself when none does). d bounds how far an impediment that begins after t still counts: one that
// begins within d of t delays what the instance could find out from t.
func (ef *effects) readyWithin(in string, t, d time.Duration) time.Duration {
	ie := ef.inst[in]
	if ie == nil {
		return t
	}
	x := t
	for changed := true; changed; {
		changed = false
		for _, s := range ie.impeded {
			if s.from <= x+d && s.to > x && s.to != history.Infinity {
				x, changed = s.to, true
			}
		}
	}
	return x
}

// impededAt reports whether instance in could not complete a call at t (or was not a member).
func (ef *effects) impededAt(in string, t time.Duration) bool {
	ie := ef.inst[in]
	if ie == nil || t < ie.start || t >= ie.gone {
		return true
	}
	for _, s := range ie.impeded {
		if s.contains(t) {
			return true
		}
	}
	return false
}

// presenceEnd is when, from t on, the others can no longer count instance in as a member of the fleet:
// a graceful stop announces it; otherwise its heartbeat, like any key it writes, lasts a heartbeat TTL
// from the landing of its write, and once none of its writes may keep it, it is gone from their view
// (t itself when it already is).
func (ef *effects) presenceEnd(in string, t time.Duration) time.Duration {
	ie := ef.inst[in]
	switch {
	case ie == nil:
		return t
	case ie.announced() && ie.gone <= t:
		return t
	}
	end := t
	for _, s := range ie.present {
		if s.from <= end && s.to > end {
			end = s.to
		}
	}
	if ie.announced() {
		end = min(end, ie.gone)
	}
	return end
}

// announced reports whether the instance left by a graceful stop whose releases and departure could
// land: the others know at once, and its holdings are released.
func (ie *instEffects) announced() bool { return ie.graceful && !ie.cutOff }

// slowdown is what a round trip of instance in costs at most, beyond the usual, around t: the delays of
// the faults on its link then.
func (ef *effects) slowdown(in string, t time.Duration) (time.Duration, *history.Event) {
	var worst time.Duration
	var by *history.Event
	for _, w := range ef.links[in] {
		// The round trip in hand (a taker's acquire or poll) matches no hold of some requests only,
		// unless it queues behind one that does.
		if d := ef.reqDelay(in, w, "", true, t) + w.repDelay(t); d > worst {
			worst, by = d, w.fault
		}
	}
	return worst, by
}

// reqDelay is how long window w may hold a request instance in sends at t, whose bytes are cmd (known
// false: not known, taken to match a hold of some requests). While the fault lasts (to w.until) a
// request it holds waits req; one it does not hold, or one sent after the fault ended, waits only behind
// what was held before it on the link, which keeps its own time: delivered by its send + req.
func (ef *effects) reqDelay(in string, w linkWindow, cmd string, known bool, t time.Duration) time.Duration {
	if w.req <= 0 || !w.contains(t) {
		return 0
	}
	held := w.match == "" || !known || strings.Contains(cmd, w.match)
	if held && t <= w.until {
		return w.req
	}
	last := time.Duration(-1) // the latest send held before t
	if w.match == "" {
		last = min(t, w.until)
	} else {
		for _, e := range ef.idx.byInst[in] {
			if e.At >= w.from && e.At <= min(t, w.until) && strings.Contains(e.Op.Command, w.match) {
				last = max(last, e.At)
			}
		}
	}
	if last < 0 {
		return 0
	}
	return max(0, last+w.req-t)
}

// repDelay is how long window w may hold a reply sent at t: rep while the fault lasts, and after it
// only as long as the replies held before it take to come out.
func (w linkWindow) repDelay(t time.Duration) time.Duration {
	if w.rep <= 0 || !w.contains(t) {
		return 0
	}
	if t <= w.until {
		return w.rep
	}
	return max(0, w.until+w.rep-t)
}

func (w linkWindow) contains(t time.Duration) bool { return t >= w.from && t <= w.to }

// releaseBy is when an instance that stops gracefully at s has sent its releases, at the latest: once its
// poll in flight is done (a poll's duration), delayed by its link; if the backend cannot take them then
// (down or frozen), as soon as it can.
func (ef *effects) releaseBy(in string, s time.Duration) time.Duration {
	at := s + ef.idx.fig.pollDuration
	at += ef.requestDelay(in, at)
	for changed := true; changed; {
		changed = false
		for _, b := range ef.backend {
			if b.slots == nil && b.from <= at && at < b.to {
				at, changed = b.to, true
			}
		}
	}
	return at
}

// requestDelay is what a request instance in sends at t may be delayed by on its link.
func (ef *effects) requestDelay(in string, t time.Duration) time.Duration {
	var d time.Duration
	for _, w := range ef.links[in] {
		d = max(d, ef.reqDelay(in, w, "", false, t))
	}
	return d
}
