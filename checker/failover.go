package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// isolatingNames are the fault names (matched as substrings) that cut their target instances off from
// the backend or the resource for a while, so their endpoints must fail over even though the instances
// stay in the fleet.
var isolatingNames = []string{"partition", "pause", "outage", "crash", "stop", "restart", "kill", "freeze"}

// isolating reports whether fault f is one whose targets' endpoints must fail over: it removes its
// targets, or it has targets and an isolating name.
func isolating(f *history.Fault) bool {
	if f.Removes {
		return true
	}
	if len(f.Targets) == 0 {
		return false
	}
	name := strings.ToLower(f.Name)
	for _, n := range isolatingNames {
		if strings.Contains(name, n) {
			return true
		}
	}
	return false
}

// checkFailover measures, for every isolating fault (see isolating), how long each affected endpoint
// went without a poll. An endpoint is affected when a target polled it within 2×PollInterval before the
// fault began. It is taken over by the first poll that reached the resource, at or after the fault's
// start, by a live instance that is not a target, or, when the fault does not remove its targets, by
// any live instance once the fault has ended. The latency (poll start minus fault start) must not exceed
// Meta.FailoverBound; for a fault that isolates every live instance (an outage) there is no survivor,
// and the latency is measured from the fault's end instead; a pause is measured from its target's "paused"
// event, when it took hold; an endpoint never polled again is a violation once the run outlived the bound.
// Endpoints paused or removed before the takeover are not measured. A graceful stop's takeovers are
// held to Meta.HandoffBound instead when the scenario sets one: a stop that releases hands over in
// milliseconds, one that leaves its leases to expire a lease TTL later.
//
// Shard faults (those that record ShardSlotsParam) are judged by checkShardGaps (shard.go): endpoints
// whose keys the fault did not touch are held to the specification's bound across it.
//
// Scale changes (lifecycle started/stopped) are judged by missed-poll windows: for each endpoint polled
// before the change, every gap between successive poll starts that overlaps [change, change+bound] must
// not exceed the bound. Changes within a bound of a non-removing fault (whose own disruption may exceed
// the bound, e.g. a backend outage) are not judged this way.
func checkFailover(idx *index, opts Options) (Result, []Failover) {
	bound := idx.meta.FailoverBound
	pi := idx.meta.PollInterval
	_, tabled := timingOf(idx.meta)
	var c collector
	var out []Failover
	faults, unmeasured := 0, 0
	for _, fe := range idx.faults {
		f := fe.Fault
		var first Deadline
		if tabled {
			d, ok := idx.deadline(fe)
			// A hold that is blind only for a call that opens a connection (callTrips) may cost its
			// target the lease, or not: calls on its open connections are answered. It owes no takeover
			// of its own; where the holder did lose the endpoint, liveness judges the gap against its
			// deadline.
			if !ok || !OwesTakeover(f, idx.meta) || len(f.Targets) == 0 {
				continue
			}
			first = d
		} else if !isolating(f) {
			continue
		}
		faults++
		targets := toSet(f.Targets)
		faultEnd := fe.At
		if fe.End >= fe.At {
			faultEnd = min(fe.End, idx.end)
		}
		start, legacyBound, boundName := fe.At, bound, "bound"
		if tabled {
			start = first.From
		} else {
			// Older histories: one bound per run (Meta.FailoverBound, Meta.HandoffBound for graceful stops).
			if !f.Removes && coversFleet(idx.liveAt(fe.At), targets) {
				start = faultEnd
			}
			if at, ok := idx.pausedAt(targets, fe.At, faultEnd); ok {
				start = at
			}
			if graceful(f) && idx.meta.HandoffBound > 0 {
				legacyBound, boundName = idx.meta.HandoffBound, "handoff bound"
			}
		}
		for _, ep := range idx.pollEndpoints() {
			polls := idx.polls[ep]
			from := lastPollBy(polls, targets, fe.At-2*pi, fe.At)
			if from == nil && tabled {
				// A target that still believed it held ep when the fault came was its holder, even if
				// a starved machine kept it from polling in the last two intervals.
				if b := idx.beliefAt(ep, targets, fe.At); b != nil {
					from = b
				}
			}
			if from == nil || !idx.activeAt(ep, fe.At) {
				continue
			}
			fo := Failover{FaultID: f.ID, Fault: f.Name, Endpoint: ep, From: from.Instance, FaultAt: fe.At,
				MeasuredFrom: start, Latency: -1, Bound: legacyBound}
			var to *history.Event
			i := sort.Search(len(polls), func(i int) bool { return polls[i].At >= fe.At })
			for ; i < len(polls); i++ {
				p := polls[i]
				if !reached(p) || !idx.liveInst(p.Instance, p.At) {
					continue
				}
				if !targets[p.Instance] || (!f.Removes && p.At >= faultEnd) {
					to = p
					break
				}
			}
			stop := idx.end
			if to != nil {
				stop = to.At
			}
			if deactivatedWithin(idx, ep, fe.At, stop) {
				continue
			}
			var deadline time.Duration
			if tabled {
				d := idx.composed(fe, first, ep, to)
				deadline, fo.Class, fo.Why = d.At, string(d.Class), d.Why
				fo.Bound = deadline - start
				boundName = "bound for " + string(d.Class)
			} else {
				// A backend outage that began before the takeover, while it was still inside the bound,
				// stops every survivor as well: the clock starts again when it ends.
				start = restartedBy(idx, start, stop, legacyBound)
				fo.MeasuredFrom = start
				deadline = start + legacyBound
			}
			switch {
			case to != nil:
				fo.To, fo.PolledAt, fo.Latency = to.Instance, to.At, to.At-fo.MeasuredFrom
				if to.At > deadline {
					c.add(Violation{At: fe.At, Endpoint: ep, Instances: []string{from.Instance, to.Instance},
						Events: []int64{fe.Seq, from.Seq, to.Seq}, From: fo.MeasuredFrom, To: to.At, Over: to.At - deadline,
						Message: fmt.Sprintf("%s on %s: %s was taken over by %s after %v, over the %s %v",
							f.Name, strings.Join(f.Targets, ","), ep, to.Instance, round(fo.Latency), boundName, round(fo.Bound))})
				}
			case idx.end >= deadline:
				c.add(Violation{At: fe.At, Endpoint: ep, Instances: []string{from.Instance},
					Events: []int64{fe.Seq, from.Seq}, From: fo.MeasuredFrom, To: idx.end, Over: idx.end - deadline,
					Message: fmt.Sprintf("%s on %s: %s, last polled by %s at %v, was never polled again by a live instance (run ended at %v, %s %v)",
						f.Name, strings.Join(f.Targets, ","), ep, from.Instance, round(from.At), round(idx.end), boundName, round(fo.Bound))})
			default:
				unmeasured++
			}
			out = append(out, fo)
		}
	}
	gaps := checkScaleGaps(idx, &c)
	shards := checkShardGaps(idx, &c)

	var lat []time.Duration
	for _, fo := range out {
		if fo.Latency >= 0 {
			lat = append(lat, fo.Latency)
		}
	}
	summary := count(len(lat), "takeover", "takeovers") + " after " + count(faults, "fault", "faults")
	if len(lat) > 0 {
		slices.Sort(lat)
		summary += fmt.Sprintf(" (p50 %v, max %v)", round(percentile(lat, 50)), round(lat[len(lat)-1]))
	}
	if tabled {
		summary += " against the bound table (" + tableNote(out) + ")"
	} else {
		summary += fmt.Sprintf(" against the bound %v%s", bound, boundNote(idx.meta))
		if hb := idx.meta.HandoffBound; hb > 0 {
			summary += fmt.Sprintf(", and the handoff bound %v for graceful stops (this scenario's own)", hb)
		}
	}
	summary += "; " + count(gaps, "scale change", "scale changes") + " checked for missed polls"
	summary += shards.String()
	if unmeasured > 0 {
		summary += "; " + count(unmeasured, "takeover", "takeovers") + " not measured because the run ended within the bound"
	}
	if len(out) == 0 && gaps == 0 && shards.faults == 0 && len(c.list) == 0 {
		why := "no fault took an endpoint from its holder and no scale change happened"
		if faults > 0 {
			why = count(faults, "fault", "faults") + " owed takeovers, but their targets polled no endpoint in the two poll intervals before them"
		}
		return Result{Invariant: InvFailover, Outcome: Skipped, Message: "nothing to judge: " + why + shards.String()}, out
	}
	return c.result(InvFailover, opts.MaxViolations,
		summary+": all within the bound",
		count(len(c.list), "endpoint", "endpoints")+" went unpolled longer than the bound after a fault or scale change; "+summary), out
}

// owesTakeover reports whether a fault of class c, hitting instances, takes their endpoints from them, so
// that another instance must take them over by the table's deadline.
func owesTakeover(c FaultClass) bool {
	switch c {
	case ClassGone, ClassSilent, ClassBlind, ClassHandoff, ClassBackendDown:
		return true
	}
	return false
}

// tableNote lists the bounds the measured takeovers were held to, per class, the longest of each
// (composed bounds included): "gone 3.101s, handoff 201ms".
func tableNote(fos []Failover) string {
	longest := map[string]time.Duration{}
	var order []string
	for _, fo := range fos {
		if _, ok := longest[fo.Class]; !ok {
			order = append(order, fo.Class)
		}
		longest[fo.Class] = max(longest[fo.Class], fo.Bound)
	}
	if len(order) == 0 {
		return "no fault owed a takeover"
	}
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s %v", c, round(longest[c]))
	}
	return strings.Join(parts, ", ")
}

// round rounds a duration for messages: to the millisecond.
func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// graceful reports whether f is a graceful stop, whose handoff Meta.HandoffBound bounds when set.
func graceful(f *history.Fault) bool { return f.Name == "stop" && f.Removes }

// boundNote says, when the history's bound is not the specification's, what the specification's is, so
// that a scenario with a bound of its own is read beside the specification.
func boundNote(m history.Meta) string {
	if m.LeaseTTL <= 0 {
		return ""
	}
	spec := SpecFailoverBound(m.LeaseTTL)
	if m.FailoverBound == spec {
		return " (the specification's: lease TTL + " + FailoverTolerance.String() + ")"
	}
	return fmt.Sprintf(" (this scenario's own; the specification's is %v: lease TTL + %v)", spec, FailoverTolerance)
}

// backendWide reports whether fault fe stops the whole fleet's access to the backend: a Redis restart,
// pause or kill (named redis-*), a wipe, or an isolating fault whose targets are every live instance.
func backendWide(idx *index, fe *history.Event) bool {
	f := fe.Fault
	if f.Removes {
		return false
	}
	if f.Wipes || strings.HasPrefix(strings.ToLower(f.Name), "redis-") {
		return true
	}
	return isolating(f) && coversFleet(idx.liveAt(fe.At), toSet(f.Targets))
}

func toSet(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// restartedBy returns when a takeover's clock starts, given that it started at start and the takeover
// came at stop (the run's end if it never came): start itself, unless a backend-wide fault (see
// backendWide) was under way at start or began before the takeover and within the bound. No
// survivor can take over while the backend is gone, and one that restarted empty or from a snapshot
// holds every grant for a TTL after it returns, so the clock starts again at that fault's end (after
// any further such fault that begins, in turn, before the takeover and within the bound of that end).
// The specification's failure model has the backend up while an instance fails; a takeover that was
// late before the backend fault began is still judged from the original start.
func restartedBy(idx *index, start, stop, bound time.Duration) time.Duration {
	for changed := true; changed; {
		changed = false
		for _, g := range idx.faults {
			if g.At >= stop || g.At > start+bound || !backendWide(idx, g) {
				continue
			}
			if end := idx.faultEnd(g); end > start { // it began within the bound, or earlier and lasted past start
				start, changed = end, true
			}
		}
	}
	return start
}

// coversFleet reports whether every instance in live is among targets.
func coversFleet(live []string, targets map[string]bool) bool {
	if len(live) == 0 {
		return false
	}
	for _, id := range live {
		if !targets[id] {
			return false
		}
	}
	return true
}

// lastPollBy returns the last poll that reached the resource by one of insts starting in [from, to].
func lastPollBy(polls []*history.Event, insts map[string]bool, from, to time.Duration) *history.Event {
	i := sort.Search(len(polls), func(i int) bool { return polls[i].At > to })
	for i--; i >= 0 && polls[i].At >= from; i-- {
		if p := polls[i]; reached(p) && insts[p.Instance] {
			return p
		}
	}
	return nil
}

// deactivatedWithin reports whether endpoint ep was paused or removed in [from, to].
func deactivatedWithin(idx *index, ep string, from, to time.Duration) bool {
	for _, e := range idx.sessions[ep] {
		if e.At >= from && e.At <= to &&
			(e.Session.Change == history.SessionPaused || e.Session.Change == history.SessionRemoved) {
			return true
		}
	}
	return false
}

// liveInst reports whether instance in was part of the fleet at t.
func (idx *index) liveInst(in string, t time.Duration) bool {
	for _, w := range idx.live[in] {
		if w.Contains(t) {
			return true
		}
	}
	return false
}

// checkScaleGaps adds a violation for every missed-poll window longer than the failover bound around a
// scale change and returns how many changes it judged. When an instance was removed by a fault (a
// crash, or a restart under a new ID, which is a crash and a start at once) within a bound before the
// change, a window that began before that fault is counted from the fault, as a failover is: the time
// between the last poll and the fault was not lost to the change. Likewise when the instance that
// made a window's first poll was removed by a fault inside the window (it took the endpoint over in
// the change and then crashed, say): the rest of the window is that fault's failover, bounded from the
// fault (FR-017, and the failover check judges it so), and the time before it was the poller's own
// poll interval. The bound is the same either way; only its start moves to the fault.
//
// With the bound table (histories with Meta.Timing), a fault near the change no longer keeps it from
// being judged: a gap that a fault hindered may last until that fault's deadline (see extended), and a
// fault that hindered nothing (the change's own start, a drift, a fault on an instance that never held
// the endpoint) excuses nothing. Older histories skip a change within a bound of a fault that neither
// removes instances nor is of class none.
func checkScaleGaps(idx *index, c *collector) int {
	bound := idx.meta.FailoverBound
	_, tabled := timingOf(idx.meta)
	cadence := idx.cadence()
	judged := 0
	reported := map[int64]bool{} // poll seq that opens a reported gap
	for _, le := range idx.lifecycle {
		ch := le.Lifecycle.Change
		if ch != history.LifeStarted && ch != history.LifeStopped {
			continue
		}
		t := le.At
		if !tabled && nearDisruptiveFault(idx, t-bound, t+bound) {
			continue
		}
		examined := false
		removedAt, removed := lastRemovingFault(idx, t-bound, t)
		for _, ep := range idx.pollEndpoints() {
			if !idx.activeAt(ep, t) || deactivatedWithin(idx, ep, t-bound, t+bound) {
				continue
			}
			polls := idx.polls[ep]
			prev, i := lastReachedBy(polls, t)
			if prev == nil {
				continue // never polled before the change: a first acquisition, not a handoff
			}
			if !examined {
				examined = true
				judged++ // a change with nothing polled before it (the initial fleet's start) judges nothing
			}
			for ; prev.At < t+bound; i++ {
				for i < len(polls) && !reached(polls[i]) {
					i++
				}
				gapEnd := idx.end
				var next *history.Event
				if i < len(polls) {
					next = polls[i]
					gapEnd = next.At
				} else if idx.end < t+bound {
					break // the run ended too soon to judge the last gap
				}
				gapStart, from := prev.At, ""
				if removed && gapStart < removedAt {
					gapStart, from = removedAt, ", counted from the fault that removed an instance"
				}
				// A poller removed inside the window hands the rest of it to that fault's failover, but
				// only if it kept its cadence until then: a poller that had stalled before it was removed
				// left the endpoint unpolled on its own.
				if at, ok := pollerRemovedWithin(idx, prev.Instance, gapStart, gapEnd); ok && at-prev.At <= cadence {
					gapStart, from = at, ", counted from the fault that removed its poller"
				}
				deadline, why := gapStart+bound, ""
				if tabled {
					taker := ""
					if next != nil {
						taker = next.Instance
					}
					d := idx.extended(Deadline{At: deadline}, ep, gapStart, gapEnd, taker, nil)
					deadline, why = d.At, d.Why
				}
				if gapEnd > deadline && !reported[prev.Seq] {
					reported[prev.Seq] = true
					v := Violation{At: prev.At, Endpoint: ep, Instances: []string{prev.Instance},
						Events: []int64{le.Seq, prev.Seq}, From: gapStart, To: gapEnd, Over: gapEnd - deadline,
						Message: fmt.Sprintf("%s not polled for %v (from %v to %v%s) around %s %s at %v, over the bound %v%s",
							ep, round(gapEnd-gapStart), round(gapStart), round(gapEnd), from, le.Instance, ch, round(t), round(deadline-gapStart), why)}
					if next != nil {
						v.Instances = append(v.Instances, next.Instance)
						v.Events = append(v.Events, next.Seq)
					}
					c.add(v)
				}
				if next == nil {
					break
				}
				prev = next
			}
		}
	}
	return judged
}

// pollerRemovedWithin returns the start of the latest fault that removed instance and began inside
// (from, to).
func pollerRemovedWithin(idx *index, instance string, from, to time.Duration) (time.Duration, bool) {
	var at time.Duration
	found := false
	for _, f := range idx.faults {
		if f.Fault.Removes && f.At > from && f.At < to && (!found || f.At > at) && slices.Contains(f.Fault.Targets, instance) {
			at, found = f.At, true
		}
	}
	return at, found
}

// lastRemovingFault returns the start of the latest fault that removed instances and began in
// [from, to].
func lastRemovingFault(idx *index, from, to time.Duration) (time.Duration, bool) {
	var at time.Duration
	found := false
	for _, f := range idx.faults {
		if f.Fault.Removes && f.At >= from && f.At <= to && (!found || f.At > at) {
			at, found = f.At, true
		}
	}
	return at, found
}

// nearDisruptiveFault reports whether a fault that does not remove instances, and is not of class none
// (a start, a clock drift), overlaps [from, to].
func nearDisruptiveFault(idx *index, from, to time.Duration) bool {
	for _, f := range idx.faults {
		if !f.Fault.Removes && Classify(f.Fault, idx.meta) != ClassNone && f.At <= to && idx.faultEnd(f) >= from {
			return true
		}
	}
	return false
}

// faultEnd is when fault event f ended: its End, its start for an instantaneous fault, and the end of
// the history for one that never ended.
func (idx *index) faultEnd(f *history.Event) time.Duration {
	if f.End == history.Infinity {
		return idx.end
	}
	return max(f.End, f.At)
}

// percentile returns the p-th percentile (nearest rank) of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

// pausedAt returns when the first of targets was paused within [from, to], if one was: the moment a
// pause fault actually took hold.
func (idx *index) pausedAt(targets map[string]bool, from, to time.Duration) (time.Duration, bool) {
	for _, e := range idx.lifecycle {
		if e.Lifecycle.Change == history.LifePaused && targets[e.Instance] && e.At >= from && e.At <= to {
			return e.At, true
		}
	}
	return 0, false
}

// lastReachedBy returns the last of polls (sorted by start) that began at or before t and reached the
// resource, or nil, and the index of the first poll that began after t.
func lastReachedBy(polls []*history.Event, t time.Duration) (*history.Event, int) {
	i := sort.Search(len(polls), func(i int) bool { return polls[i].At > t })
	for j := i - 1; j >= 0; j-- {
		if reached(polls[j]) {
			return polls[j], i
		}
	}
	return nil, i
}
