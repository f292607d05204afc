package checker

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Fault effects: what the run's faults did to each instance and to the backend, read off the fault log,
// the lifecycle events and the instances' own calls. A fault's name says what the harness did; its effect
// on an instance is what the model reasons with, and where the history can show it (a call of the
// instance that went unanswered, a pause that took hold), the model asks the history rather than the
// fault log.

// Effect is what a fault does, as the model reads it.
type Effect string

// The effects.
const (
	// EffectGone: the instance left without releasing (a crash, a restart under a new ID); nothing it
	// sends lands afterwards.
	EffectGone Effect = "gone"
	// EffectStopped: the instance stopped gracefully: it finishes its poll in flight, releases and
	// announces its departure.
	EffectStopped Effect = "stopped"
	// EffectPaused: the instance is frozen; nothing it does happens until it wakes.
	EffectPaused Effect = "paused"
	// EffectStalled: the instance's calls hang, neither answered nor failed; it runs on otherwise.
	EffectStalled Effect = "stalled"
	// EffectCutOff: nothing the instance sends lands, and nothing comes back.
	EffectCutOff Effect = "cut off"
	// EffectBlind: what the instance sends lands, but the replies are lost.
	EffectBlind Effect = "blind"
	// EffectSlowed: the instance's requests or replies are delayed.
	EffectSlowed Effect = "slowed"
	// EffectBackendDown: the backend cannot answer for a while (killed, frozen, cut off from every
	// instance) and keeps its data.
	EffectBackendDown Effect = "backend down"
	// EffectDataLoss: the backend may have lost writes: it restarted empty or from a snapshot, a replica
	// was promoted, a slot moved to a node that never held it.
	EffectDataLoss Effect = "data loss"
	// EffectNone: nothing the model needs (a start, a clock drift, a session change).
	EffectNone Effect = "none"
	// EffectHandoff is no fault's: the holder released the endpoint (to rebalance, or stopping).
	EffectHandoff Effect = "handoff"
)

// EffectOf returns what fault f does, as the model reads it.
func EffectOf(f *history.Fault) Effect {
	name := strings.ToLower(f.Name)
	switch name {
	case "crash", "restart", "aborted-start":
		return EffectGone
	case "stop":
		return EffectStopped
	case "pause", "freeze":
		return EffectPaused
	case "stall":
		return EffectStalled
	case "partition", "outage":
		return EffectCutOff
	case "one-way-partition", "conn-reset":
		return EffectBlind
	case "latency", "slow-requests", "slow-replies":
		return EffectSlowed
	case "redis-pause", "redis-restart-aof":
		return EffectBackendDown
	case "redis-restart", "redis-restart-from-snapshot", "primary-kill", "primary-isolate",
		"sentinel-failover", "shard-primary-kill", "slot-migration", "shard-node-restart":
		return EffectDataLoss
	}
	switch {
	case f.Wipes:
		return EffectDataLoss
	case f.Removes:
		return EffectGone
	}
	return EffectNone
}

// TakesHolding reports whether fault f, on an instance of a run with meta m, can end what the instance
// holds: it is gone, frozen, or its calls hang or fail (a delay counts when even a call on an open
// connection outlasts its bound). A scenario whose written step does so exercises failover.
func TakesHolding(f *history.Fault, m history.Meta) bool {
	switch EffectOf(f) {
	case EffectGone, EffectStopped, EffectPaused, EffectStalled, EffectCutOff, EffectBlind:
		return true
	case EffectSlowed:
		// A hold that matches some requests only (a release) leaves the others alone.
		fig := figuresOf(m)
		_, _, fastReq, fastRep := delays(f)
		return f.Params["match"] == "" && fig.opTimeout > 0 && fastReq+fastRep >= fig.opTimeout
	}
	return false
}

// delays returns what a slowing fault adds to a request and to a reply at most (req, rep), and at least
// (fastReq, fastRep). A latency fault slows each round trip by latency ± jitter, half each way.
func delays(f *history.Fault) (req, rep, fastReq, fastRep time.Duration) {
	switch strings.ToLower(f.Name) {
	case "latency":
		l, j := paramDur(f, "latency"), paramDur(f, "jitter")
		return (l + j) / 2, (l + j) / 2, max(l-j, 0) / 2, max(l-j, 0) / 2
	case "slow-requests":
		d := paramDur(f, "delay")
		return d, 0, d, 0
	case "slow-replies":
		d := paramDur(f, "delay")
		return 0, d, 0, d
	}
	return 0, 0, 0, 0
}

// span is a stretch of run time [from, to); to is history.Infinity for one that never ended.
type span struct{ from, to time.Duration }

func (s span) contains(t time.Duration) bool { return t >= s.from && t < s.to }

// mergeSpans returns spans sorted and joined where they meet or overlap.
func mergeSpans(in []span) []span {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var merged []span
	for _, s := range out {
		if s.to <= s.from {
			continue
		}
		if n := len(merged); n > 0 && s.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// linkWindow is a fault on one instance's link (or on every instance's, for an outage) while it lasted.
type linkWindow struct {
	fault    *history.Event
	from, to time.Duration
	mute     bool          // requests are dropped
	deaf     bool          // replies are dropped
	req, rep time.Duration // what a request and a reply may be delayed by
}

// backendWindow is a stretch in which the backend (or the part of it a set of slots lives on) could not
// answer: killed, or frozen (requests then land when it resumes).
type backendWindow struct {
	fault    *history.Event
	from, to time.Duration
	frozen   bool
	slots    []slotRange // nil: every key
}

// instEffects is what happened to one instance.
type instEffects struct {
	start    time.Duration // when it joined the fleet
	gone     time.Duration // when it left for good; history.Infinity if it never did
	graceful bool          // it left by a graceful stop
	goneBy   *history.Event
	paused   []span
	stalled  []span
	failed   []*history.Event // its calls that went unanswered
	// impeded are the stretches in which it could not complete a call: paused, stalled, and from each
	// unanswered call of its own to the end of what explains it (the fault window on its link or the
	// backend that covered the call, else the moment its caller gave up). Merged.
	impeded []span
	// lastWrite is the latest moment any write it sent may have reached the backend.
	lastWrite time.Duration
	wrote     bool
}

// effects is the second half of the model's input, beside the lease record: every instance's effects,
// every link and backend window.
type effects struct {
	idx     *index
	inst    map[string]*instEffects
	links   map[string][]linkWindow
	backend []backendWindow
}

func newEffects(idx *index) *effects {
	ef := &effects{idx: idx, inst: map[string]*instEffects{}, links: map[string][]linkWindow{}}
	for _, in := range idx.instances {
		ie := &instEffects{start: 0, gone: history.Infinity}
		if ws := idx.live[in]; len(ws) > 0 {
			ie.start = ws[0].From
			if last := ws[len(ws)-1]; last.To < idx.end {
				ie.gone = last.To
			}
		}
		ef.inst[in] = ie
	}
	ef.readFaults()
	ef.readLifecycle()
	ef.readCalls()
	return ef
}

// readFaults turns the fault log into link and backend windows, and stalls.
func (ef *effects) readFaults() {
	idx := ef.idx
	for _, fe := range idx.faults {
		f := fe.Fault
		from, to := fe.At, idx.faultEnd(fe)
		slots, _ := parseSlots(f.Params[ShardSlotsParam])
		switch strings.ToLower(f.Name) {
		case "partition", "outage":
			ef.addLink(fe, f.Targets, linkWindow{fault: fe, from: from, to: to, mute: true, deaf: true})
		case "one-way-partition":
			ef.addLink(fe, f.Targets, linkWindow{fault: fe, from: from, to: to, deaf: true})
		case "latency", "slow-requests", "slow-replies":
			req, rep, _, _ := delays(f)
			w := linkWindow{fault: fe, from: from, to: to, req: req, rep: rep}
			// Data held when a hold ends keeps its own time, and data sent after it on the same
			// connection waits behind it: the window's effect lasts one delay longer.
			w.to = to + max(req, rep)
			ef.addLink(fe, f.Targets, w)
		case "stall":
			for _, t := range f.Targets {
				if ie := ef.inst[t]; ie != nil {
					ie.stalled = append(ie.stalled, span{from, to})
				}
			}
		case "redis-pause":
			ef.backend = append(ef.backend, backendWindow{fault: fe, from: from, to: to, frozen: true, slots: slots})
		case "redis-restart", "redis-restart-aof":
			ef.backend = append(ef.backend, backendWindow{fault: fe, from: from, to: to, slots: slots})
		case "redis-restart-from-snapshot":
			// The server runs on until the step ends, then is killed and started from the snapshot.
			ef.backend = append(ef.backend, backendWindow{fault: fe, from: to, to: to, slots: slots})
		case "primary-kill", "shard-primary-kill":
			// Down until a replica is promoted (or, failing that, until the step's end).
			end := to
			if p, ok := idx.promotionOf(fe); ok {
				end = max(end, p)
			}
			ef.backend = append(ef.backend, backendWindow{fault: fe, from: from, to: end, slots: slots})
		}
	}
}

func (ef *effects) addLink(fe *history.Event, targets []string, w linkWindow) {
	if len(targets) == 0 {
		targets = ef.idx.instances
	}
	for _, t := range targets {
		ef.links[t] = append(ef.links[t], w)
	}
}

// readLifecycle notes pauses (from the moment they took hold) and graceful stops.
func (ef *effects) readLifecycle() {
	idx := ef.idx
	open := map[string]time.Duration{}
	for _, e := range idx.lifecycle {
		ie := ef.inst[e.Instance]
		if ie == nil {
			continue
		}
		switch e.Lifecycle.Change {
		case history.LifePaused:
			if _, ok := open[e.Instance]; !ok {
				open[e.Instance] = e.At
			}
		case history.LifeResumed:
			if at, ok := open[e.Instance]; ok {
				ie.paused = append(ie.paused, span{at, e.At})
				delete(open, e.Instance)
			}
		}
	}
	for in, at := range open {
		ef.inst[in].paused = append(ef.inst[in].paused, span{at, history.Infinity})
	}
	for _, fe := range idx.faults {
		if !fe.Fault.Removes {
			continue
		}
		for _, t := range fe.Fault.Targets {
			ie := ef.inst[t]
			if ie == nil || ie.gone == history.Infinity || fe.At > ie.gone {
				continue
			}
			ie.goneBy = fe
			ie.graceful = EffectOf(fe.Fault) == EffectStopped
		}
	}
	for _, e := range idx.lifecycle {
		ie := ef.inst[e.Instance]
		if ie == nil || ie.goneBy != nil || e.At != ie.gone {
			continue
		}
		if e.Lifecycle.Change == history.LifeStopped {
			ie.graceful = true
		}
	}
}

// readCalls finds each instance's unanswered calls and the latest landing of its writes, and derives
// when it was impeded.
func (ef *effects) readCalls() {
	idx := ef.idx
	for in, ie := range ef.inst {
		for _, e := range idx.byInst[in] {
			if unanswered(e) {
				ie.failed = append(ie.failed, e)
			}
			if writes(e) {
				if l, ok := ef.landing(e); ok {
					ie.lastWrite, ie.wrote = max(ie.lastWrite, l), true
				}
			}
		}
		var imp []span
		imp = append(imp, ie.paused...)
		imp = append(imp, ie.stalled...)
		for _, c := range ie.failed {
			imp = append(imp, span{c.At, ef.explainedUntil(in, c)})
		}
		ie.impeded = mergeSpans(imp)
	}
}

// explainedUntil is how long an unanswered call c of instance in leaves it unable to complete a call:
// until the end of the fault window on its link or on the backend that covered the call (a partition, a
// hold, a restart), else until its caller gave up.
func (ef *effects) explainedUntil(in string, c *history.Event) time.Duration {
	end := gaveUp(c, ef.idx.fig)
	for _, w := range ef.links[in] {
		if w.from <= end && c.At <= w.to {
			end = max(end, w.to)
		}
	}
	for _, b := range ef.backend {
		if b.from <= end && c.At <= b.to {
			end = max(end, b.to)
		}
	}
	return end
}

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

// writeCommands are the plain commands that create or extend a key.
var writeCommands = map[string]bool{
	"set": true, "setex": true, "psetex": true, "setnx": true, "getset": true, "expire": true, "pexpire": true,
	"zadd": true, "hset": true, "hmset": true, "hsetnx": true, "sadd": true, "incr": true, "incrby": true,
}

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
		return max(e.End, e.At), true
	}
	from, to := e.At, gaveUp(e, ef.idx.fig)
	if ef.dropped(e.Instance, from, to) {
		return 0, false
	}
	land := to
	for _, w := range ef.links[e.Instance] {
		if w.req > 0 && w.from <= to && from < w.to {
			land = max(land, min(to, w.to)+w.req)
		}
	}
	for _, b := range ef.backend {
		if b.frozen && b.from <= land && from < b.to {
			land = max(land, b.to)
		}
	}
	return land, true
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

// presenceEnd is when the others can no longer count instance in as a member of the fleet: a graceful
// stop announces it; otherwise its heartbeat, like any key it writes, lasts the heartbeat TTL from the
// latest moment one of its writes may have landed.
func (ef *effects) presenceEnd(in string) time.Duration {
	ie := ef.inst[in]
	switch {
	case ie == nil:
		return 0
	case ie.graceful:
		return ie.gone
	case !ie.wrote:
		return ie.start
	}
	return ie.lastWrite + ef.idx.fig.heartbeatTTL + ExpiryTick
}

// slowdown is what a round trip of instance in costs at most, beyond the usual, around t: the delays of
// the faults on its link then.
func (ef *effects) slowdown(in string, t time.Duration) (time.Duration, *history.Event) {
	var worst time.Duration
	var by *history.Event
	for _, w := range ef.links[in] {
		if w.contains(t) && w.req+w.rep > worst {
			worst, by = w.req+w.rep, w.fault
		}
	}
	return worst, by
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
		if w.contains(t) {
			d = max(d, w.req)
		}
	}
	return d
}

// promotionOf returns the promotion fault fe caused, if the history shows one: the first promotion
// within the fault's window, or, after a fault that ends at once (a primary killed), the first one
// after it before which the backend granted nothing (a write answered in between shows the backend
// was serving, and the promotion that follows is another event's).
func (idx *index) promotionOf(fe *history.Event) (time.Duration, bool) {
	end := idx.faultEnd(fe)
	for _, p := range idx.promotionTimes() {
		if p < fe.At {
			continue
		}
		if p <= end {
			return p, true
		}
		for _, e := range idx.ops {
			if e.At > fe.At+SchedulingAllowance && e.End < p && e.Op.OK && !unanswered(e) &&
				(e.Op.Kind == history.OpAcquire || e.Op.Kind == history.OpRenew || e.Op.Kind == history.OpRelease) {
				return 0, false
			}
		}
		return p, true
	}
	return 0, false
}

// promotionTimes returns when the history's promotion notes were written, in order.
func (idx *index) promotionTimes() []time.Duration {
	var out []time.Duration
	for _, e := range idx.notes {
		if strings.HasPrefix(e.Note, history.NotePromotion) {
			out = append(out, e.At)
		}
	}
	return out
}
