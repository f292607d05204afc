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
			g.late = addSat(g.ob.deadline, m.fig.pollDuration) < g.to
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
		cad := m.nextPoll(h, prev.At)
		end, why, cause := m.holdingEnd(ep, h, prev.At)
		if end > cad {
			obs = append(obs, obligation{kind: "cadence", by: h, from: prev.At, deadline: cad,
				why: []string{fmt.Sprintf("%s polled at %v and held on: its next poll was due within its cadence (poll interval %v%s + poll duration %v + tolerance %v)",
					h, round(prev.At), m.fig.pollInterval, ownClock(m.clocks[h], prev.At), m.fig.pollDuration, FailoverTolerance)}})
		} else {
			// A release, or a graceful stop (which releases), hands the endpoint over.
			// A stop cut off from the backend released nothing and told nobody.
			handoff := cause != nil && (cause.Kind == history.KindOp ||
				(cause.Fault != nil && EffectOf(cause.Fault) == EffectStopped && m.ef.inst[h] != nil && !m.ef.inst[h].cutOff))
			t := m.takeover(ep, end, h, next, false, handoff)
			t.why = append([]string{fmt.Sprintf("%s's holding ended at %v (%s)", h, round(end), why)}, t.why...)
			t.cause, t.effect, t.measured = m.attribute(h, end, cause)
			obs = append(obs, t)
			take = &t
			if r, ok := m.resumed(ep, h, end, to); ok {
				obs = append(obs, r)
			}
		}
	} else {
		t := m.takeover(ep, from, "", next, true, false)
		t.kind = "first grant"
		t.why = append([]string{fmt.Sprintf("%s became an active poll target at %v", ep, round(from))}, t.why...)
		obs = append(obs, t)
		take = &t
		// An instance that held the endpoint across its activation (a session paused or removed,
		// then back, while its lease was kept) holds it now: it learns of the activation within the
		// detection latency and owes its poll within its cadence, unless its holding ends first.
		for _, in := range m.instances {
			w, _, ok := m.ls.at(in, ep, from)
			if !ok || w.from > from {
				continue
			}
			due := from + m.fig.detect() + m.fig.cadence()
			if end, _, _ := m.holdingEnd(ep, in, from); end > due {
				obs = append(obs, obligation{kind: "new holding", by: in, from: from, deadline: due,
					why: []string{fmt.Sprintf("%s held %s when it became an active poll target at %v (its confirmed lease from %v): it owed its first poll within the detection latency %v and its cadence",
						in, ep, round(from), round(w.from), m.fig.detect())}})
			}
		}
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
						in, ep, round(w.from), w.first.Op.Kind, round(w.first.At))}})
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

// resumed returns the obligation of a holder whose holding of ep the history showed ended at end, but
// which, in the gap that runs to to, had it confirmed again: an acquire or renewal it sent after end,
// answered as granted while its confirmed lease held (or an unconditional renewal of the key while a
// value of its own may have been in it, by its own writes). Its holding goes on (whatever it believed,
// its value is in the key by its own hand, kept from everyone else), and it owes its next poll within
// its cadence of the confirmation, unless the holding ends again first by something other than its
// belief.
func (m *model) resumed(ep, h string, end, to time.Duration) (obligation, bool) {
	for _, e := range m.opsOf(ep) {
		if e.Instance != h || e.At < end || e.End >= to || !answered(e) || !e.Op.OK ||
			(e.Op.Kind != history.OpAcquire && e.Op.Kind != history.OpRenew) {
			continue
		}
		if _, _, ok := m.ls.at(h, ep, e.End); !ok && !(e.Op.Owner == history.AnyOwner && m.ownValueAlive(ep, h, e.At)) {
			continue
		}
		// Only what ends a holding whatever the holder believes: a belief that lapses while its own
		// renewals go on being granted ends nothing.
		due := e.End + m.fig.cadence()
		if again, _, _ := m.holdingEndOf(ep, h, e.End, false); again <= due {
			continue
		}
		return obligation{kind: "new holding", by: h, from: e.End, deadline: due,
			why: []string{fmt.Sprintf("%s's holding of %s was confirmed again at %v (its %s sent at %v, after the holding ended at %v, was granted): it held on, and its next poll was due within its cadence",
				h, ep, round(e.End), e.Op.Kind, round(e.At), round(end))}}, true
	}
	return obligation{}, false
}

// ownValueAlive reports whether a value instance in wrote may have been in ep's key at t, by its own
// writes.
func (m *model) ownValueAlive(ep, in string, t time.Duration) bool {
	for _, v := range m.rec.valuesOf(ep) {
		if v.writer != in {
			continue
		}
		for _, s := range v.own {
			if s.contains(t) {
				return true
			}
		}
	}
	return false
}

// holdingEnd returns when the history first shows instance in's holding of ep, as of a poll (or grant)
// at t, ended, why, and the fault that caused it if one did: its departure, a pause that took hold, a
// call of its own that went unanswered (it may fail closed), a release it sent, a renewal refused, the
// end of its belief, the end of its confirmed lease. history.Infinity when nothing did.
func (m *model) holdingEnd(ep, in string, t time.Duration) (time.Duration, string, *history.Event) {
	return m.holdingEndOf(ep, in, t, true)
}

// holdingEndOf is holdingEnd, counting the end of the holder's belief only when beliefs is set.
func (m *model) holdingEndOf(ep, in string, t time.Duration, beliefs bool) (time.Duration, string, *history.Event) {
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
			} else if ie.goneBy != nil && ie.goneBy.Fault.ID == "self" {
				w = "it exited by itself"
			} else if ie.goneBy != nil {
				w = "it was removed by " + ie.goneBy.Fault.ID + " " + ie.goneBy.Fault.Name
			}
			note(ie.gone, w, ie.goneBy)
		}
		for _, p := range ie.paused {
			note(p.from, "a pause took hold", m.faultOn(in, p.from, "pause", "freeze", "wire-pause"))
		}
		for _, c := range ie.failed {
			if g := gaveUp(c, m.fig); g >= t && g < end {
				note(g, fmt.Sprintf("its %s sent at %v went unanswered", orCommand(c), round(c.At)), m.windowCause(in, c))
			}
		}
	}
	// A release or a refused renewal ends the holding when it concerns the value held (one of the
	// confirmed lease in force at t, when there is one): a call about another value of the key leaves
	// the holding as it was.
	var held []string
	if w, _, ok := m.ls.at(in, ep, t); ok {
		held = []string{w.first.Op.Owner, w.last.Op.Owner}
	}
	concerns := func(e *history.Event) bool {
		return len(held) == 0 || e.Op.Owner == history.AnyOwner || slices.Contains(held, e.Op.Owner) || slices.Contains(held, history.AnyOwner)
	}
	for _, e := range m.opsOf(ep) {
		if e.Instance != in || e.At < t || !concerns(e) {
			continue
		}
		switch {
		case e.Op.Kind == history.OpRelease:
			note(e.At, fmt.Sprintf("it sent a release at %v", round(e.At)), e)
		case e.Op.Kind == history.OpRenew && !unanswered(e) && !e.Op.OK && e.End != history.Infinity && !m.quorumRenewed(e):
			note(e.End, fmt.Sprintf("its renewal at %v was refused", round(e.At)), nil)
		}
	}
	for _, b := range m.believed(ep) {
		if beliefs && b.inst == in && b.from <= t && t <= b.to && b.to < m.end {
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

// quorumRenewed reports whether a refused renewal e went to one of several independent nodes (a lock
// held by a majority of them) in a round whose renewals a majority granted: the holding goes on.
func (m *model) quorumRenewed(e *history.Event) bool {
	nodes := map[string]bool{}
	for _, k := range m.rec.byEp[e.Endpoint] {
		nodes[k.node] = true
	}
	if e.Op.Node == "" || len(nodes) < 2 {
		return false
	}
	granted := map[string]bool{}
	for _, r := range m.opsOf(e.Endpoint) {
		if r.Instance == e.Instance && r.Op.Kind == history.OpRenew && r.Op.Node != e.Op.Node && answered(r) && r.Op.OK &&
			r.At >= e.At-m.fig.opTimeout && r.At <= e.At+m.fig.opTimeout {
			granted[r.Op.Node] = true
		}
	}
	return 2*len(granted) > len(nodes)
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
		return cause, EffectHandoff, min(end, cause.At)
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

// ownClock words the stretch a slow clock gives an interval begun at t: " of its own clock, running at
// 0.955", or nothing at the run's rate.
func ownClock(rates []clockRate, t time.Duration) string {
	for _, c := range rates {
		if c.from <= t && t < c.to && c.rate != 1 {
			return fmt.Sprintf(" of its own clock, running at %g", c.rate)
		}
	}
	return ""
}
