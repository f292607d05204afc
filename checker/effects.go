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
	case "crash", "restart", "aborted-start", "exit":
		return EffectGone
	case "stop":
		return EffectStopped
	case "pause", "freeze", "wire-pause":
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
	// fastReq is what a request is delayed by at least while the fault holds (a hold: its delay;
	// a latency: its fastest one-way trip); until is when the fault itself ended (to may reach past it,
	// for data a hold keeps delivering at its own time).
	fastReq time.Duration
	until   time.Duration
	// match, for a hold of some requests only, is what a request's bytes contain to be held.
	match string
}

// backendWindow is a stretch in which the backend (or the part of it a set of slots lives on) could not
// answer: killed, or frozen (requests then land when it resumes).
type backendWindow struct {
	fault    *history.Event
	from, to time.Duration
	frozen   bool
	slots    []slotRange // nil: every key
	// served: the history contradicts a freeze (see markServed).
	served bool
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
	ef.markServed()
	ef.readLifecycle()
	ef.readCalls()
	for in, ie := range ef.inst {
		if ie.graceful && ie.gone != history.Infinity {
			ie.cutOff = ef.dropped(in, ie.gone, ef.releaseBy(in, ie.gone))
		}
	}
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
			req, rep, fastReq, _ := delays(f)
			if f.Params["match"] != "" {
				fastReq = 0 // a request that does not match is not held
			}
			w := linkWindow{fault: fe, from: from, to: to, req: req, rep: rep, fastReq: fastReq, until: to, match: f.Params["match"]}
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

// markServed marks the frozen windows the history contradicts: a call the window can have held, sent
// past the scheduling allowance after it began, answered before its end less that allowance.
func (ef *effects) markServed() {
	for i := range ef.backend {
		b := &ef.backend[i]
		if !b.frozen {
			continue
		}
		for _, e := range ef.idx.ops {
			if e.At >= b.from+SchedulingAllowance && e.At < b.to && answered(e) && e.End < b.to-SchedulingAllowance && b.reaches(e) {
				b.served = true
				break
			}
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
		switch e.Lifecycle.Change {
		case history.LifeStopped:
			ie.graceful = true
		case history.LifeCrashed:
			// It ended by itself, with no fault of the harness on it (a process that exited): a failed
			// holder all the same, whose end its takeovers are measured from, as after a crash.
			ie.goneBy = selfExit(e)
		}
	}
}

// selfExit is the fault an instance's own end stands for in the model, when it ended without the
// harness's doing: named "exit", its effect that of a crash.
func selfExit(e *history.Event) *history.Event {
	return &history.Event{Seq: e.Seq, Kind: history.KindFault, At: e.At, End: e.At,
		Fault: &history.Fault{ID: "self", Name: "exit", Targets: []string{e.Instance}, Removes: true,
			Params: map[string]string{"how": "the instance exited by itself"}}}
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
