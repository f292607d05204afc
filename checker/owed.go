package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// What is owed, and when. Every endpoint, while it is an active poll target, is owed its next valid poll
// (one that reached the resource inside its poller's confirmed lease) by a deadline the model derives.
// Between two valid polls there is a gap; the gap is judged against the earliest deadline of the
// obligations in force in it:
//
//   - cadence: the holder that made the last poll owes the next one within its cadence (a poll interval,
//     a poll's duration and the tolerance), for as long as nothing in the history ends its holding: its
//     departure, a pause that took hold, a call of its own that went unanswered, a release it sent, a
//     renewal refused, the end of its belief or of its confirmed lease;
//   - takeover: once the holding ended, the endpoint is owed from the earliest moment at which, in every
//     possible world, its key holds nothing that nobody live can remove (a value expired, or its live
//     writer has had time to clear it), no guard holds grants back (a TTL after a system can learn of
//     a possible data loss), the instances the history shows the endpoint assigned to are ready or gone
//     from the fleet's view, and some live instance has been unimpeded for the detection latency; the
//     deadline adds the taker's slowed round trip and the tolerance;
//   - first grant: an endpoint that became active is owed like a takeover, once a system can have learnt
//     of it;
//   - new holding: an instance granted the endpoint in the gap owes a poll within its cadence of the grant.
//
// Failover, liveness, handoffs and scale changes are all judged by this one computation: failover
// reports the gaps whose holding a fault on the holder ended, liveness the rest.

// obligation is one thing owed in a gap: a valid poll of the endpoint by deadline.
type obligation struct {
	kind     string        // "cadence", "takeover", "first grant", "new holding"
	by       string        // who owes it (cadence, new holding); "" for a takeover
	holder   string        // the previous holder (takeover)
	from     time.Duration // when it began: the poll, the end of the holding, the activation, the grant
	deadline time.Duration
	// why derives the deadline, step by step, for the reader.
	why []string
	// cause is the fault that ended the previous holder's holding, when one on the holder did, and the
	// effect through which it did.
	cause  *history.Event
	effect Effect
	// measured is when a failover's clock starts: the fault's start, or when a pause took hold.
	measured time.Duration
}

// gapJudgement is one gap between valid polls of an endpoint and the obligation that binds it.
type gapJudgement struct {
	ep         string
	from, to   time.Duration // the last valid poll's start (or the activation) .. the next valid poll's start, or the end
	prev, next *history.Event
	// ob is the obligation that binds the gap: the earliest deadline in force.
	ob obligation
	// take is the takeover obligation of the gap, when the previous holding ended in it (or the
	// endpoint became active): what a failover is measured against.
	take *obligation
	late bool
	// open: no valid poll ended the gap (the run or the active interval ended first).
	open bool
}

// owed judges every gap of every active endpoint.
func (m *model) owed() []gapJudgement {
	if !m.fig.timed {
		return nil
	}
	var out []gapJudgement
	for _, ep := range m.pollEndpoints() {
		for _, a := range m.activeIntervals(ep) {
			out = append(out, m.gapsOf(ep, a)...)
		}
	}
	return out
}

// validPoll reports whether poll p reached the resource inside its poller's confirmed lease (or, for a
// system whose backend calls are not modelled, inside its poller's belief, when it reports beliefs).
func (m *model) validPoll(p *history.Event) bool {
	if !reached(p) {
		return false
	}
	if m.rec.modelled(p.Endpoint) {
		return m.ls.valid(p, m.meta.LeaseTTL, m.meta.Assumptions.DriftBound)
	}
	if bs := m.beliefs[p.Endpoint]; len(bs) > 0 {
		for _, b := range m.believed(p.Endpoint) {
			if b.inst == p.Instance && b.from <= p.At && p.At <= b.to {
				return true
			}
		}
		return false
	}
	return true
}

// believed caches beliefsOf per endpoint.
func (m *model) believed(ep string) []belief {
	if m.beliefCache == nil {
		m.beliefCache = map[string][]belief{}
	}
	bs, ok := m.beliefCache[ep]
	if !ok {
		bs = beliefsOf(m.index, ep)
		m.beliefCache[ep] = bs
	}
	return bs
}

// gapsOf judges the gaps of endpoint ep in its active interval a.
func (m *model) gapsOf(ep string, a history.Window) []gapJudgement {
	var valid []*history.Event
	for _, p := range m.polls[ep] {
		if p.At >= a.From && p.At <= a.To && m.validPoll(p) {
			valid = append(valid, p)
		}
	}
	var out []gapJudgement
	var prev *history.Event
	from := a.From
	for i := 0; i <= len(valid); i++ {
		g := gapJudgement{ep: ep, from: from, prev: prev}
		if i < len(valid) {
			g.next, g.to = valid[i], valid[i].At
		} else {
			g.to, g.open = min(a.To, m.end), true
		}
		g.ob, g.take = m.binding(ep, prev, g.next, from, g.to, a)
		switch {
		case !g.open:
			g.late = g.to > g.ob.deadline
		case g.to >= m.end:
			// A poll is recorded when it ends: one that began less than a poll's duration before the
			// end of the run is not in the history. The gap is late only if a poll meeting the deadline
			// would have been recorded.
			g.late = g.ob.deadline+m.fig.pollDuration < g.to
		default:
			g.late = g.ob.deadline < g.to
		}
		out = append(out, g)
		if g.next != nil {
			prev, from = g.next, g.next.At
		}
	}
	return out
}

// binding returns the obligation with the earliest deadline in the gap [from, to) of ep.
func (m *model) binding(ep string, prev, next *history.Event, from, to time.Duration, a history.Window) (obligation, *obligation) {
	var obs []obligation
	var take *obligation
	if prev != nil {
		h := prev.Instance
		cad := prev.At + m.fig.cadence()
		end, why, cause := m.holdingEnd(ep, h, prev.At)
		if end > cad {
			obs = append(obs, obligation{kind: "cadence", by: h, from: prev.At, deadline: cad,
				why: []string{fmt.Sprintf("%s polled at %v and held on: its next poll was due within its cadence (poll interval %v + poll duration %v + tolerance %v)",
					h, round(prev.At), m.fig.pollInterval, m.fig.pollDuration, FailoverTolerance)}})
		} else {
			// A release, or a graceful stop (which releases), hands the endpoint over.
			handoff := cause != nil && (cause.Kind == history.KindOp || (cause.Fault != nil && EffectOf(cause.Fault) == EffectStopped))
			t := m.takeover(ep, end, h, next, false, handoff)
			t.why = append([]string{fmt.Sprintf("%s's holding ended at %v (%s)", h, round(end), why)}, t.why...)
			t.cause, t.effect, t.measured = m.attribute(h, end, cause)
			obs = append(obs, t)
			take = &t
		}
	} else {
		t := m.takeover(ep, from, "", next, true, false)
		t.kind = "first grant"
		t.why = append([]string{fmt.Sprintf("%s became an active poll target at %v", ep, round(from))}, t.why...)
		obs = append(obs, t)
		take = &t
	}
	// A holding granted in the gap owes its first poll within its cadence, unless it ended first.
	for _, in := range m.instances {
		for _, w := range m.ls.windows[leaseKey{in, ep}] {
			if w.from <= from || w.from >= to {
				continue
			}
			due := w.from + m.fig.cadence()
			if end, _, _ := m.holdingEnd(ep, in, w.from); end > due {
				obs = append(obs, obligation{kind: "new holding", by: in, from: w.from, deadline: due,
					why: []string{fmt.Sprintf("%s was granted %s at %v (%s sent at %v) and held on: its first poll was due within its cadence",
						in, ep, round(w.from), w.last.Op.Kind, round(w.last.At))}})
			}
		}
	}
	best := obs[0]
	for _, o := range obs[1:] {
		if o.deadline < best.deadline {
			best = o
		}
	}
	return best, take
}

// holdingEnd returns when the history first shows instance in's holding of ep, as of a poll (or grant)
// at t, ended, why, and the fault that caused it if one did: its departure, a pause that took hold, a
// call of its own that went unanswered (it may fail closed), a release it sent, a renewal refused, the
// end of its belief, the end of its confirmed lease. history.Infinity when nothing did.
func (m *model) holdingEnd(ep, in string, t time.Duration) (time.Duration, string, *history.Event) {
	ie := m.ef.inst[in]
	end, why := history.Infinity, ""
	var cause *history.Event
	note := func(at time.Duration, w string, c *history.Event) {
		if at >= t && at < end {
			end, why, cause = at, w, c
		}
	}
	if ie != nil {
		if ie.gone != history.Infinity {
			w := "it left the fleet"
			if ie.graceful {
				w = "it stopped gracefully"
			} else if ie.goneBy != nil {
				w = "it was removed by " + ie.goneBy.Fault.ID + " " + ie.goneBy.Fault.Name
			}
			note(ie.gone, w, ie.goneBy)
		}
		for _, p := range ie.paused {
			note(p.from, "a pause took hold", m.faultOn(in, p.from, "pause", "freeze"))
		}
		for _, c := range ie.failed {
			if g := gaveUp(c, m.fig); g >= t && g < end {
				note(g, fmt.Sprintf("its %s sent at %v went unanswered", orCommand(c), round(c.At)), m.windowCause(in, c))
			}
		}
	}
	for _, e := range m.opsOf(ep) {
		if e.Instance != in || e.At < t {
			continue
		}
		switch {
		case e.Op.Kind == history.OpRelease:
			note(e.At, fmt.Sprintf("it sent a release at %v", round(e.At)), e)
		case e.Op.Kind == history.OpRenew && !unanswered(e) && !e.Op.OK && e.End != history.Infinity:
			note(e.End, fmt.Sprintf("its renewal at %v was refused", round(e.At)), nil)
		}
	}
	for _, b := range m.believed(ep) {
		if b.inst == in && b.from <= t && t <= b.to && b.to < m.end {
			note(b.to, "its belief ended: "+b.ended, m.faultOn(in, b.to))
		}
	}
	if w, i, ok := m.ls.at(in, ep, t); ok {
		ws := m.ls.windows[leaseKey{in, ep}]
		for i+1 < len(ws) && ws[i+1].from <= w.to {
			i++
			w.to = max(w.to, ws[i].to)
		}
		note(w.to, fmt.Sprintf("its confirmed lease ran out (its %s sent at %v)", w.last.Op.Kind, round(w.last.At)), m.faultOn(in, w.to))
	}
	if cause == nil && end != history.Infinity {
		// A belief that ended with a release sent right after it was handed over.
		for _, e := range m.opsOf(ep) {
			if e.Instance == in && e.Op.Kind == history.OpRelease && e.At >= end && e.At <= end+m.fig.cadence() {
				cause = e
				break
			}
		}
	}
	return end, why, cause
}

func orCommand(e *history.Event) string {
	if w := firstWord(e.Op.Command); w != "" {
		return w
	}
	return string(e.Op.Kind)
}

// faultOn returns a fault on instance in (of one of names, when given) that can end a holding (see
// TakesHolding) and whose effect reached t: t lies in its window, or within the detection latency after
// it (an instant fault, a connection reset, is noticed at the next call).
func (m *model) faultOn(in string, t time.Duration, names ...string) *history.Event {
	for _, fe := range m.faults {
		if fe.At <= t && t <= m.faultEnd(fe)+m.fig.detect() && slices.Contains(fe.Fault.Targets, in) &&
			(len(names) == 0 || slices.Contains(names, strings.ToLower(fe.Fault.Name))) &&
			(len(names) > 0 || TakesHolding(fe.Fault, m.meta)) {
			return fe
		}
	}
	return nil
}

// windowCause returns the fault whose window on instance in's link, or on the backend, explains its
// unanswered call c.
func (m *model) windowCause(in string, c *history.Event) *history.Event {
	g := gaveUp(c, m.fig)
	for _, w := range m.ef.links[in] {
		if w.from <= g && c.At <= w.to {
			return w.fault
		}
	}
	for _, b := range m.ef.backend {
		if b.from <= g && c.At <= b.to {
			return b.fault
		}
	}
	return m.faultOn(in, c.At, "stall")
}

// attribute says what ended the holder's holding at end, when it makes a failover of the gap: a fault
// that hit the holder itself, or a release the holder sent (a handoff).
func (m *model) attribute(holder string, end time.Duration, cause *history.Event) (*history.Event, Effect, time.Duration) {
	if cause != nil && cause.Kind == history.KindOp {
		return cause, EffectHandoff, cause.At
	}
	if cause == nil || cause.Fault == nil || !slices.Contains(cause.Fault.Targets, holder) {
		return nil, EffectNone, 0
	}
	eff := EffectOf(cause.Fault)
	if eff == EffectPaused {
		return cause, eff, end
	}
	return cause, eff, cause.At
}

// takeover derives the takeover obligation of ep from the moment e its previous holding (of holder, ""
// for none) ended; next is the valid poll that ended the gap, if one did. learn adds the detection
// latency a system needs to find a new target.
func (m *model) takeover(ep string, e time.Duration, holder string, next *history.Event, learn, handoff bool) obligation {
	ob := obligation{kind: "takeover", holder: holder, from: e}
	owed := e
	move := func(to time.Duration, why string) {
		if to > owed {
			owed = to
			ob.why = append(ob.why, why)
		}
	}
	d := m.fig.detect()
	if learn {
		if fs, ok := m.fleetStart(); !ok || e > fs {
			move(e+d, fmt.Sprintf("a system learns of a new target within its detection latency (%v): %v", d, round(e+d)))
		}
	}
	// The key: every value that may still be in it must be gone, or cleared by its live writer. A key
	// whose operations are not modelled (a PostgreSQL lock) is read off the holder's effects instead.
	if !m.rec.modelled(ep) && holder != "" {
		at, why := m.unmodelledHold(holder, e)
		move(at, why)
	}
	// A holding granted after the holding ended is the takeover itself, not what it waits for, and its
	// grant shows the key was to be had then.
	vals := m.rec.valuesOf(ep)
	sortValues(vals)
	granted := history.Infinity
	keyAt := owed
	var keyWhy string
	for _, v := range vals {
		before := history.Infinity
		if g, ok := v.grantedFrom(e); ok {
			granted = min(granted, g.End)
			before = g.At
		}
		if v.untilBefore(before) <= owed {
			continue
		}
		if at, why := m.blockedUntil(v, e, before); at > keyAt {
			keyAt, keyWhy = at, why
		}
	}
	if keyAt > granted {
		keyAt, keyWhy = granted, fmt.Sprintf("the key was to be had by %v, when it was granted", round(granted))
	}
	if keyWhy != "" {
		move(keyAt, keyWhy)
	}
	assign := m.meta.Kind == "lease" && m.fig.heartbeat > 0
	for changed := true; changed; {
		changed = false
		before := owed
		if g, why, ok := m.guardAt(ep, owed); ok {
			move(g, why)
		}
		if assign {
			for _, a := range m.assignees(ep, holder, next, e, owed, handoff) {
				if w, why, ok := m.waitFor(a, owed); ok {
					move(w, why)
				}
			}
		}
		if r, who := m.someoneReady(owed); r > owed {
			if r == history.Infinity {
				ob.deadline = history.Infinity
				ob.why = append(ob.why, "no live instance could take it over")
				return ob
			}
			move(r, fmt.Sprintf("no live instance could act before %v (%s was the first unimpeded for the detection latency %v)", round(r), who, d))
		}
		changed = owed != before
	}
	taker := ""
	if next != nil {
		taker = next.Instance
	}
	if taker != "" {
		if s, by := m.ef.slowdown(taker, owed); s > 0 {
			owed += s
			ob.why = append(ob.why, fmt.Sprintf("%s's round trips were slowed by %v (%s %s)", taker, s, by.Fault.ID, by.Fault.Name))
		}
	}
	ob.deadline = owed + FailoverTolerance
	ob.why = append(ob.why, fmt.Sprintf("owed at %v, plus the tolerance %v", round(owed), FailoverTolerance))
	return ob
}

// blockedUntil is until when value v, which may be in ep's key after e, keeps the key from anybody:
// until it expires, unless its writer must clear it sooner. A value its writer believed in, whose writes
// landed in the course of things, may run out its TTL: that is what the specification's TTL bounds. A
// stale value is another matter: one its writer never saw granted (an acquire whose reply was lost), or
// one a write of which may have landed after its writer gave up on it (held on the wire, or applied when
// a frozen backend resumed), holds the key for nobody past what any bound allows. Its writer, if still
// in the fleet, knows it: once the write may have landed and the writer has been ready for the
// detection latency, it releases it (the reference does, at its next attempt at the endpoint). A writer
// that stopped gracefully promised to release within its poll in flight, its link's delay included. A
// writer gone without a word leaves its values to expire.
func (m *model) blockedUntil(v *value, e, before time.Duration) (time.Duration, string) {
	end := v.untilBefore(before)
	ie := m.ef.inst[v.writer]
	expire := fmt.Sprintf("the key may hold %s's value %s until %v (its last write may have landed at %v)", v.writer, v.v, round(end), round(v.lastLanding))
	switch {
	case ie == nil:
		return end, expire
	case ie.graceful && ie.gone < history.Infinity:
		rel := m.ef.releaseBy(v.writer, ie.gone)
		if rel < end {
			return rel, fmt.Sprintf("%s stopped gracefully at %v and was to release %s within its poll in flight and its link's delay: %v", v.writer, round(ie.gone), v.v, round(rel))
		}
		return end, expire
	}
	late, why, stale := m.stale(v)
	if !stale {
		return end, expire
	}
	r := m.ef.ready(v.writer, late)
	if r == history.Infinity {
		return end, expire
	}
	clear := max(v.lastLanding, late+m.fig.detect(), r)
	if clear < end {
		return clear, fmt.Sprintf("%s's value %s was stale (%s): %s could clear it by %v (ready, and a detection latency %v after %v)",
			v.writer, v.v, why, v.writer, round(clear), m.fig.detect(), round(late))
	}
	return end, expire
}

// stale reports whether value v is one its writer must clear, and from when the writer could know: it
// never saw v granted (from the moment it gave up on its acquires), or a write of v sent after the last
// one its writer saw answered may have landed after its writer gave up on it (from then).
func (m *model) stale(v *value) (time.Duration, string, bool) {
	writes := append(slices.Clone(v.acq), v.renews...)
	slices.SortStableFunc(writes, byCall)
	var lastOK time.Duration
	confirmed := false
	var gave time.Duration
	for _, w := range writes {
		if !unanswered(w) && w.Op.OK && !w.Op.NotReplicated && w.End != history.Infinity {
			confirmed, lastOK = true, w.At
		}
		if w.Op.Kind == history.OpAcquire {
			gave = max(gave, gaveUp(w, m.fig))
		}
	}
	if !confirmed {
		return gave, "its acquire got no reply", true
	}
	var late time.Duration
	why := ""
	for _, w := range writes {
		if !unanswered(w) || w.At < lastOK {
			continue
		}
		g := gaveUp(w, m.fig)
		if l, ok := m.ef.landing(w); ok && l > g+SchedulingAllowance && g > late {
			late, why = g, fmt.Sprintf("its %s sent at %v may have landed at %v, after it gave up at %v", w.Op.Kind, round(w.At), round(l), round(g))
		}
	}
	return late, why, why != ""
}

// unmodelledHold is until when holder's holding may last in a backend whose operations the history does
// not model (a PostgreSQL advisory lock held by a session), its holding having ended for it at e: a
// holder gone without releasing may hold it a TTL from its departure; one that stopped gracefully
// released it within its poll in flight; one frozen, cut off or stalled holds it until the backend frees
// a silent holder (its dead-peer bound) from when that began; one whose replies were lost goes on writing
// until it can know, a detection latency, and then for the dead-peer bound; one whose connection was
// reset lost its session at once, and a standby finds it free within a TTL; one whose holding ended with
// no fault on it released it, or lets it lapse within a TTL.
func (m *model) unmodelledHold(holder string, e time.Duration) (time.Duration, string) {
	ie := m.ef.inst[holder]
	if ie != nil && ie.gone != history.Infinity && ie.gone <= e {
		if ie.graceful {
			at := m.ef.releaseBy(holder, ie.gone)
			return at, fmt.Sprintf("%s stopped gracefully at %v and was to release within its poll in flight: %v", holder, round(ie.gone), round(at))
		}
		at := ie.gone + m.fig.ttl
		return at, fmt.Sprintf("%s left without releasing at %v: its holding lasts at most a TTL (%v): %v", holder, round(ie.gone), m.fig.ttl, round(at))
	}
	for _, fe := range m.faults {
		if !slices.Contains(fe.Fault.Targets, holder) || fe.At > e || m.faultEnd(fe)+m.fig.detect() < e {
			continue
		}
		from := fe.At
		switch EffectOf(fe.Fault) {
		case EffectPaused:
			for _, p := range ie.paused {
				if p.from >= fe.At && p.from <= e {
					from = p.from
				}
			}
			fallthrough
		case EffectCutOff, EffectStalled:
			at := from + m.fig.deadPeer
			return at, fmt.Sprintf("%s was silenced by %s %s at %v: the backend frees a silent holder within its dead-peer bound (%v): %v", holder, fe.Fault.ID, fe.Fault.Name, round(from), m.fig.deadPeer, round(at))
		case EffectBlind:
			if strings.EqualFold(fe.Fault.Name, "conn-reset") {
				at := fe.At + m.fig.ttl
				return at, fmt.Sprintf("%s's connection was reset by %s at %v, ending its session: free within a TTL (%v): %v", holder, fe.Fault.ID, round(fe.At), m.fig.ttl, round(at))
			}
			at := fe.At + m.fig.detect() + m.fig.deadPeer
			return at, fmt.Sprintf("%s's replies were lost to %s from %v: it writes on until it can know (detection latency %v), then the dead-peer bound (%v): %v", holder, fe.Fault.ID, round(fe.At), m.fig.detect(), m.fig.deadPeer, round(at))
		}
	}
	at := e + m.fig.ttl
	return at, fmt.Sprintf("%s's holding ended at %v with no fault on it: released, or lapsing within a TTL (%v): %v", holder, round(e), m.fig.ttl, round(at))
}

// guardAt returns the end of a guard that holds ep's grants back at t: after the run's start on a fresh
// dataset, a wipe, a restore, a promotion, a moved slot, a system grants nothing for a TTL after it can
// learn of it, which it does within the detection latency of the event.
func (m *model) guardAt(ep string, t time.Duration) (time.Duration, string, bool) {
	d, ttl := m.fig.detect(), m.fig.ttl
	best, why, found := t, "", false
	// from is when the event began (a grant needed while it lasts waits for it too), at when the
	// backend came back from it.
	consider := func(from, at time.Duration, what string) {
		if end := at + d + ttl; from <= t && t < end && end > best {
			best, why, found = end, fmt.Sprintf("%s at %v: no grant for a TTL (%v) after a system can learn of it (detection latency %v): %v", what, round(at), ttl, d, round(end)), true
		}
	}
	if fs, ok := m.fleetStart(); ok {
		consider(0, fs, "the run starts on a fresh dataset")
	}
	keys := m.rec.byEp[ep]
	touched := func(slots []slotRange, node string) bool {
		if len(keys) == 0 {
			return true
		}
		for _, k := range keys {
			if touches(slots, k.key) && wipedBy(k.node, node) {
				return true
			}
		}
		return false
	}
	for _, fe := range m.faults {
		if fe.Fault.Err != "" || EffectOf(fe.Fault) != EffectDataLoss {
			continue
		}
		slots, _ := parseSlots(fe.Fault.Params[ShardSlotsParam])
		if touched(slots, fe.Fault.WipedNode) {
			consider(fe.At, m.faultEnd(fe), fe.Fault.ID+" "+fe.Fault.Name)
		}
	}
	for _, n := range m.notes {
		if strings.HasPrefix(n.Note, history.NotePromotion) && touched(noteSlots(n.Note), "") {
			consider(n.At, n.At, "a promotion ("+strings.TrimPrefix(n.Note, history.NotePromotion)+")")
		}
	}
	return best, why, found
}

// assignees are the instances the history shows ep assigned to, in a fleet that assigns its endpoints
// (one that announces itself with heartbeats): the previous holder, the instance that polled it next,
// and every instance that tried to acquire it since the holding ended. A holder that released the
// endpoint (to rebalance, or stopping) handed it over to a member the fleet counted on: any instance
// that was a member then, as far as the others could tell — one gone without a word is counted on
// until its heartbeat runs out.
func (m *model) assignees(ep, holder string, next *history.Event, e, owed time.Duration, handoff bool) []string {
	var out []string
	add := func(in string) {
		if in != "" && !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	add(holder)
	if handoff {
		for _, in := range m.instances {
			if ie := m.ef.inst[in]; ie != nil && ie.start <= e && m.ef.presenceEnd(in) > e && !(ie.graceful && ie.gone <= e) {
				add(in)
			}
		}
	}
	stop := owed
	if next != nil {
		add(next.Instance)
		stop = min(stop, next.At)
	}
	for _, op := range m.opsOf(ep) {
		if op.Op.Kind == history.OpAcquire && op.At >= e && op.At <= stop {
			add(op.Instance)
		}
	}
	return out
}

// waitFor is until when the fleet may leave ep to assignee a, which is not ready at t: until it is
// ready again, or until the others can no longer count it a member (its heartbeat ran out), whichever
// comes first.
func (m *model) waitFor(a string, t time.Duration) (time.Duration, string, bool) {
	r := m.ef.ready(a, t)
	if r <= t {
		return 0, "", false
	}
	p := m.ef.presenceEnd(a)
	w := min(r, p)
	if w <= t {
		return 0, "", false
	}
	if p <= r {
		return w, fmt.Sprintf("the endpoint was %s's, which could not act, until its heartbeat ran out at %v (its last write may have landed at %v, heartbeat TTL %v)",
			a, round(p), round(m.ef.inst[a].lastWrite), m.fig.heartbeatTTL), true
	}
	return w, fmt.Sprintf("the endpoint was %s's, which could act again at %v (unimpeded for the detection latency %v)", a, round(r), m.fig.detect()), true
}

// someoneReady returns the earliest moment at or after t at which some member of the fleet has been
// unimpeded for the detection latency, and who; history.Infinity when none ever is.
func (m *model) someoneReady(t time.Duration) (time.Duration, string) {
	best, who := history.Infinity, ""
	for _, in := range m.instances {
		if r := m.ef.ready(in, t); r < best {
			best, who = r, in
		}
	}
	return best, who
}
