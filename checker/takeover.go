package checker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// The takeover: once a holding ended, the earliest moment at which, in every possible world, the key
// holds nothing that nobody live can remove, no guard holds grants back, the instances the endpoint is
// shown assigned to are ready or gone from the fleet's view, and some member is ready.

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
		if v.ownUntilBefore(before) <= owed {
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
	// The rest is a fixpoint of the guard, the assignment and the fleet's readiness. The endpoint may be
	// assigned to any of several instances, and the history does not say which: each is a world of its
	// own, settled on its own, and the endpoint is owed at the latest of them. (Settled together, one
	// world's wait would be judged at the moment another's ended: an assignee that could act when the
	// endpoint moved to it would be waited for again for an impediment that befell it later.)
	// Who the assignees are depends on how long the endpoint is owed (an instance that tries to acquire
	// it meanwhile is one): the set is read again until the latest world stops moving.
	cache := newSettleCache()
	worst, worstWhy, inf, _ := m.settle(ep, owed, "", cache)
	if !inf && m.meta.Kind == "lease" && m.fig.heartbeat > 0 {
		memo := map[worldKey]world{}
		settled := map[string]bool{}
		for grew := true; grew && !inf; {
			grew = false
			for _, a := range m.assignees(ep, holder, next, e, worst, handoff) {
				if settled[a] {
					continue
				}
				settled[a] = true
				w := m.assignedWorld(ep, a, owed, memo, cache)
				if w.inf {
					worst, worstWhy, inf = w.owed, w.why, true
					break
				}
				if w.owed > worst {
					worst, worstWhy, grew = w.owed, w.why, true
				}
			}
		}
	}
	if inf {
		ob.deadline = history.Infinity
		ob.why = append(ob.why, worstWhy...)
		return ob
	}
	if worst > owed {
		owed = worst
		ob.why = append(ob.why, worstWhy...)
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
		if s, by := m.slowClock(taker, owed); s > 0 {
			owed += s
			ob.why = append(ob.why, fmt.Sprintf("%s's clock ran slow (%s %s, rate %s): a wait it timed on it, up to a TTL and a detection latency, ran %v long",
				taker, by.Fault.ID, by.Fault.Name, by.Fault.Params["rate"], s))
		}
	}
	ob.deadline = addSat(owed, FailoverTolerance)
	ob.why = append(ob.why, fmt.Sprintf("owed at %v, plus the tolerance %v", round(owed), FailoverTolerance))
	return ob
}

// slowClock is how much later than the run's clock a wait that instance in timed on its own clock, and
// that was to end at t, may have ended: a clock-drift fault the history records on it with a rate below
// 1 stretches the part of the wait it covered by 1/rate. The longest wait a taker times is a guard's, a
// TTL and a detection latency.
func (m *model) slowClock(in string, t time.Duration) (time.Duration, *history.Event) {
	var worst time.Duration
	var by *history.Event
	from := t - m.fig.ttl - m.fig.detect()
	for _, fe := range m.faults {
		if !strings.EqualFold(fe.Fault.Name, driftFault) || !slices.Contains(fe.Fault.Targets, in) {
			continue
		}
		rate, err := strconv.ParseFloat(fe.Fault.Params["rate"], 64)
		if err != nil || rate <= 0 || rate >= 1 {
			continue
		}
		covered := min(t, m.faultEnd(fe)) - max(from, fe.At)
		if covered <= 0 {
			continue
		}
		if s := time.Duration(float64(covered) * (1/rate - 1)); s > worst {
			worst, by = s, fe
		}
	}
	return worst, by
}

// blockedUntil is until when value v, which may be in ep's key after e, keeps the key from anybody:
// until it expires, unless its writer must clear it sooner. A value its writer believed in, whose writes
// landed in the course of things, may run out its TTL: that is what the specification's TTL bounds. A
// stale value is another matter: one its writer never saw granted (an acquire whose reply was lost), or
// one a write of which may have landed after its writer gave up on it (held on the wire, or applied when
// a frozen backend resumed), holds the key for nobody past what any bound allows. Its writer, if still
// in the fleet, knows it: once the write may have landed and the writer has been ready for the
// detection latency, it releases it (the reference does, at its next attempt at the endpoint). A writer
// that stopped gracefully promised to release within its poll in flight, its link's delay included,
// unless its link dropped what it sent then. A writer gone without a word leaves its values to expire.
func (m *model) blockedUntil(v *value, e, before time.Duration) (time.Duration, string) {
	end := v.ownUntilBefore(before)
	ie := m.ef.inst[v.writer]
	// The value's writes before the grant that ends this holding: a value an instance writes again in
	// a later holding (an election's value is its candidate's ID) is judged by what came before it.
	landed := m.lastLandingBefore(v, before)
	expire := fmt.Sprintf("the key may hold %s's value %s until %v (its last write may have landed at %v)", v.writer, v.v, round(end), round(landed))
	if all := v.untilBefore(before); all > end {
		expire += fmt.Sprintf("; %s's unconditional renewal kept it until %v, which buys the system no time", strings.Join(v.extenders, ", "), round(all))
	}
	switch {
	case ie == nil:
		return end, expire
	case ie.announced() && ie.gone < history.Infinity:
		rel := m.ef.releaseBy(v.writer, ie.gone)
		if rel < end {
			return rel, fmt.Sprintf("%s stopped gracefully at %v and was to release %s within its poll in flight and its link's delay: %v", v.writer, round(ie.gone), v.v, round(rel))
		}
		return end, expire
	}
	late, why, stale := m.stale(v, before)
	if !stale {
		return end, expire
	}
	r := m.ef.ready(v.writer, late)
	if r == history.Infinity {
		return end, expire
	}
	// Only the life the late write may have added is the writer's to clear: what its answered writes
	// gave the value, it believed in, and that runs out its TTL.
	clear := max(landed, late+m.fig.detect(), r, m.believedUntil(v, before))
	if clear < end {
		return clear, fmt.Sprintf("%s's value %s was stale (%s): %s could clear it by %v (ready, and a detection latency %v after %v)",
			v.writer, v.v, why, v.writer, round(clear), m.fig.detect(), round(late))
	}
	return end, expire
}

// believedUntil is until when the writes of value v sent before before, that its writer saw answered
// as granted, keep it in the key: each from its latest landing for a TTL (the write's own when shorter).
func (m *model) believedUntil(v *value, before time.Duration) time.Duration {
	var until time.Duration
	for _, w := range append(slices.Clone(v.acq), v.renews...) {
		if w.At >= before || unanswered(w) || !w.Op.OK || w.Op.NotReplicated || w.End == history.Infinity {
			continue
		}
		ttl := m.fig.ttl
		if w.Op.TTL > 0 {
			ttl = min(ttl, w.Op.TTL)
		}
		if l, ok := m.ef.landing(w); ok {
			until = max(until, l+ttl)
		}
	}
	return until
}

// lastLandingBefore is the latest moment a write of value v sent before before may have landed.
func (m *model) lastLandingBefore(v *value, before time.Duration) time.Duration {
	var last time.Duration
	for _, w := range append(slices.Clone(v.acq), v.renews...) {
		if w.At >= before {
			continue
		}
		if l, ok := m.ef.landing(w); ok {
			last = max(last, l)
		}
	}
	return last
}

// stale reports whether value v, as its writes sent before before left it, is one its writer must
// clear, and from when the writer could know: it never saw v granted (from the moment it gave up on
// its acquires), or a write of v sent after the last one its writer saw answered may have landed after
// its writer gave up on it (from then).
func (m *model) stale(v *value, before time.Duration) (time.Duration, string, bool) {
	var writes []*history.Event
	for _, w := range append(slices.Clone(v.acq), v.renews...) {
		if w.At < before {
			writes = append(writes, w)
		}
	}
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
		if ie.announced() {
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

// guardAt returns the end of a guard that holds ep's grants back when the endpoint is owed at t: after
// the run's start on a fresh dataset, a wipe, a restore, a promotion, a moved slot, a system grants
// nothing for a TTL after it can learn of it, which it does within the detection latency of the event.
// An event counts when it began before the deadline t gives (t and the tolerance): a taker whose grant
// was still under way then met it.
func (m *model) guardAt(ep string, t time.Duration) (time.Duration, string, bool) {
	d, ttl := m.fig.detect(), m.fig.ttl
	best, why, found := t, "", false
	// from is when the event began (a grant needed while it lasts waits for it too), at when the
	// backend came back from it.
	consider := func(from, at time.Duration, what string) {
		if end := at + d + ttl; from <= t+FailoverTolerance && t < end && end > best {
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
		from := fe.At
		if strings.EqualFold(fe.Fault.Name, "redis-restart-from-snapshot") {
			// The server serves on until the step ends, then restarts from the snapshot taken when it
			// began: the loss begins at the restart.
			from = m.faultEnd(fe)
		}
		if touched(slots, fe.Fault.WipedNode) {
			consider(from, m.faultEnd(fe), fe.Fault.ID+" "+fe.Fault.Name)
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
// until its heartbeat runs out. So did a holder the others counted gone, at the moment its heartbeat
// ran out.
func (m *model) assignees(ep, holder string, next *history.Event, e, owed time.Duration, handoff bool) []string {
	var out []string
	add := func(in string) {
		if in != "" && !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	add(holder)
	members := func(t time.Duration) {
		for _, in := range m.membersAt(t) {
			add(in)
		}
	}
	if handoff {
		members(e)
	}
	// A holder the others count gone once its heartbeat runs out leaves its endpoints to be assigned
	// afresh then, among the members they still count on: any of those may be the assignee.
	if holder != "" && !handoff {
		if pe := m.ef.presenceEnd(holder, e); pe <= owed {
			members(pe)
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
// comes first; gone says it is the latter, when the endpoint is assigned afresh.
func (m *model) waitFor(a string, t time.Duration) (until time.Duration, why string, gone, ok bool) {
	r := m.ef.ready(a, t)
	if r <= t {
		return 0, "", false, false
	}
	p := m.ef.presenceEnd(a, t)
	w := min(r, p)
	if w <= t {
		return 0, "", false, false
	}
	if p <= r {
		return w, fmt.Sprintf("the endpoint was %s's, which could not act, until its heartbeat ran out at %v (its last write may have landed at %v, heartbeat TTL %v)",
			a, round(p), round(m.ef.inst[a].lastWrite), m.fig.heartbeatTTL), true, true
	}
	return w, fmt.Sprintf("the endpoint was %s's, which could act again at %v (unimpeded for the detection latency %v)", a, round(r), m.fig.detect()), false, true
}

// settle is the fixpoint from t of the guard, assignee a's wait (none when a is ""), and the fleet's
// readiness: the moment the endpoint is owed in the world where it is a's, with the reasons; inf when
// no live instance could ever take it over. gone is when a's wait ended because the others counted a
// gone (0 when it did not): the endpoint was assigned afresh then.
func (m *model) settle(ep string, t time.Duration, a string, c *settleCache) (owed time.Duration, why []string, inf bool, gone time.Duration) {
	owed = t
	move := func(to time.Duration, w string) {
		if to > owed {
			owed = to
			why = append(why, w)
		}
	}
	d := m.fig.detect()
	for changed := true; changed; {
		before := owed
		if g, w, ok := c.guard(m, ep, owed); ok {
			move(g, w)
		}
		if a != "" {
			if w, r, g, ok := m.waitFor(a, owed); ok {
				move(w, r)
				if g {
					gone = w
				}
			}
		}
		if r, w, ok := m.resumeOf(ep, owed); ok {
			move(r, w)
		}
		if r, who := c.ready(m, owed); r > owed {
			if r == history.Infinity {
				return history.Infinity, append(why, "no live instance could take it over"), true, 0
			}
			move(r, fmt.Sprintf("no live instance could act before %v (%s was the first unimpeded for the detection latency %v)", round(r), who, d))
		}
		changed = owed != before
	}
	return owed, why, false, gone
}

// settleCache keeps, for one takeover, the guard and the fleet's readiness at each moment asked: every
// world of the assignment asks them again.
type settleCache struct {
	readyAt map[time.Duration]readyAnswer
	guardAt map[time.Duration]guardAnswer
}

type readyAnswer struct {
	at  time.Duration
	who string
}

type guardAnswer struct {
	at  time.Duration
	why string
	ok  bool
}

func newSettleCache() *settleCache {
	return &settleCache{readyAt: map[time.Duration]readyAnswer{}, guardAt: map[time.Duration]guardAnswer{}}
}

func (c *settleCache) ready(m *model, t time.Duration) (time.Duration, string) {
	r, ok := c.readyAt[t]
	if !ok {
		r.at, r.who = m.someoneReady(t)
		c.readyAt[t] = r
	}
	return r.at, r.who
}

func (c *settleCache) guard(m *model, ep string, t time.Duration) (time.Duration, string, bool) {
	g, ok := c.guardAt[t]
	if !ok {
		g.at, g.why, g.ok = m.guardAt(ep, t)
		c.guardAt[t] = g
	}
	return g.at, g.why, g.ok
}

// world is the endpoint's obligation in one world of its assignment.
type world struct {
	owed time.Duration
	why  []string
	inf  bool
}

type worldKey struct {
	a  string
	at time.Duration
}

// assignedWorld settles the world in which ep is assigned to a from t. When the fleet's wait for a ends
// because the others count it gone, they assign ep afresh among the members they count then: each of
// those is a world from that moment, and the latest of them is this world's. Each such move comes at a
// member's heartbeat expiry, later than the one before, so the chains end; memo keeps each (member,
// moment) settled once.
func (m *model) assignedWorld(ep, a string, t time.Duration, memo map[worldKey]world, c *settleCache) world {
	k := worldKey{a, t}
	if w, ok := memo[k]; ok {
		return w
	}
	owed, why, inf, gone := m.settle(ep, t, a, c)
	w := world{owed: owed, why: why, inf: inf}
	if !inf && gone > t {
		for _, b := range m.membersAt(gone) {
			if b == a {
				continue
			}
			sub := m.assignedWorld(ep, b, gone, memo, c)
			if sub.inf || sub.owed > w.owed {
				w = world{owed: sub.owed, inf: sub.inf,
					why: append(append(slices.Clone(why), fmt.Sprintf("the others counted %s gone at %v and assigned the endpoint afresh among their members: it may have gone to %s", a, round(gone), b)), sub.why...)}
				if sub.inf {
					break
				}
			}
		}
	}
	memo[k] = w
	return w
}

// membersAt lists the instances the others count members at t: started, and present by their writes.
func (m *model) membersAt(t time.Duration) []string {
	var out []string
	for _, in := range m.instances {
		if ie := m.ef.inst[in]; ie != nil && ie.start <= t && m.ef.presenceEnd(in, t) > t {
			out = append(out, in)
		}
	}
	return out
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

// resumeOf is when a frozen backend that holds ep's keys at t resumed: a frozen Redis grants nothing (a
// request sent to it lands when it resumes), so what is owed inside the freeze is owed at its end. The
// premise, the freeze, is read off the history, not the fault log alone: the backend answered nothing
// sent well inside the window (past the scheduling allowance after it began) before the window's end
// less that allowance, and nothing of ep's keys or naming no key. A window the history contradicts
// defers nothing.
func (m *model) resumeOf(ep string, t time.Duration) (time.Duration, string, bool) {
	keys := m.rec.byEp[ep]
	for _, b := range m.ef.backend {
		if !b.frozen || b.fault.Fault.Err != "" || t < b.from || t >= b.to {
			continue
		}
		if len(keys) > 0 && !slices.ContainsFunc(keys, func(k *keyRecord) bool { return touches(b.slots, k.key) }) {
			continue
		}
		if b.served {
			continue
		}
		return b.to, fmt.Sprintf("the backend was frozen by %s %s from %v until %v, and granted nothing before it resumed (it answered nothing sent in between): %v",
			b.fault.Fault.ID, b.fault.Fault.Name, round(b.from), round(b.to), round(b.to)), true
	}
	return 0, "", false
}
