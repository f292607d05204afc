package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// pausedGrace returns how long after a pause or removal a poll may still start: one poll interval (the
// poll was already decided) plus a quarter interval, at least 20 ms, for scheduling on a loaded machine.
//
// A system learns of a pause at its next scan of the targets, so the grace also covers one discovery
// interval when the history records it (older histories: none).
func pausedGrace(pi, discovery time.Duration) time.Duration {
	return discovery + pi + max(pi/4, 20*time.Millisecond)
}

// LivenessLimit is how long an active endpoint may go without a poll when no fault excuses it: the
// lease TTL (a grant may wait for a lease to run out, or for the fresh-dataset guard at the start of a
// run), a poll interval and a poll's duration (a holder starts its next poll at most an interval after
// the last one ended), and FailoverTolerance.
func LivenessLimit(m history.Meta) time.Duration {
	var pd time.Duration
	if m.Timing != nil {
		pd = m.Timing.PollDuration
	}
	return m.LeaseTTL + m.PollInterval + pd + FailoverTolerance
}

// checkLiveness judges two things:
//
//   - starvation, at every moment of the run: every endpoint, while it is an active poll target, is
//     polled (a poll that reached the resource starting) within LivenessLimit of the last poll before,
//     or of when it became active. A fault that hindered the endpoint (see extended: a backend-wide
//     fault, or one that hit an instance that held it) lets the gap last until the fault's deadline in
//     the bound table, and no longer; the result says which faults excused which gaps, and until when.
//     When Meta.Endpoints exceeds the endpoints ever polled (and there are no session events) the
//     missing ones are reported too. Histories recorded before the bound table (no Meta.Timing) are
//     judged as they were then: only in their steady windows, by PollInterval+LeaseTTL;
//   - paused and removed sessions: no poll (of any outcome) of an endpoint starts later than pausedGrace
//     after its pause or removal, until it is resumed or added again. A poll already in flight may finish.
func checkLiveness(idx *index, opts Options) Result {
	m := idx.meta
	if _, ok := timingOf(m); !ok {
		return checkLivenessInSteadyWindows(idx, opts)
	}
	limit := LivenessLimit(m)
	var c collector
	if !idx.hasSessEv && m.Endpoints > len(idx.polls) {
		c.add(Violation{At: 0, Message: fmt.Sprintf("only %d of the %d endpoints were ever polled", len(idx.polls), m.Endpoints)})
	}
	judged, excused := 0, 0
	var longest excusedGap
	start, started := idx.fleetStart()
	t, _ := timingOf(m)
	for _, ep := range idx.pollEndpoints() {
		for _, a := range idx.activeIntervals(ep) {
			judged++
			for _, g := range gapsIn(idx.polls[ep], a.From, min(a.To, idx.end)) {
				d := Deadline{At: g.from + limit, Why: fmt.Sprintf("the liveness limit, lease TTL + poll interval + poll duration + tolerance = %v", limit)}
				// The run begins on a backend the fleet has never used: a fresh dataset, as after a wipe.
				// Its first grants may wait for the guard a correct system keeps then, a TTL after it
				// learns of it, which it does within notice of its start.
				if started && g.prev == nil && g.from <= start {
					if fresh := start + notice(t) + m.LeaseTTL + FailoverTolerance; fresh > d.At {
						d.At = fresh
						d.Why = fmt.Sprintf("the run's start on a fresh dataset: the fleet's first start (%v), notice (%v), a TTL (%v) and the tolerance", round(start), notice(t), m.LeaseTTL)
					}
				}
				stop, taker := g.to, ""
				if g.next != nil {
					taker = g.next.Instance
				} else {
					stop = idx.end
				}
				d = idx.extended(d, ep, g.from, stop, taker, nil)
				if g.to <= d.At {
					if g.to-g.from > limit {
						excused++
						if g.to-g.from > longest.gap {
							longest = excusedGap{gap: g.to - g.from, ep: ep, why: d.Why}
						}
					}
					continue
				}
				what := fmt.Sprintf("%s was not polled for %v (from %v to %v)", ep, round(g.to-g.from), round(g.from), round(g.to))
				switch {
				case g.next == nil && g.to == idx.end:
					what = fmt.Sprintf("%s was not polled after %v (the run ended at %v)", ep, round(g.from), round(g.to))
				case g.next == nil:
					what = fmt.Sprintf("%s was not polled from %v until its session was paused or removed at %v", ep, round(g.from), round(g.to))
				}
				viol := Violation{At: g.from, Endpoint: ep, From: g.from, To: g.to, Over: g.to - d.At,
					Message: fmt.Sprintf("%s; allowed until %v by %s", what, round(d.At), d.Why)}
				for _, p := range []*history.Event{g.prev, g.next} {
					if p != nil {
						viol.Events = append(viol.Events, p.Seq)
						viol.Instances = append(viol.Instances, p.Instance)
					}
				}
				c.add(viol)
			}
		}
	}
	paused := checkPausedSessions(idx, &c)
	scope := fmt.Sprintf("%s judged for starvation over the whole run (limit %v)", count(judged, "endpoint interval", "endpoint intervals"), round(limit))
	if excused > 0 {
		scope += fmt.Sprintf("; %s excused by the faults that hindered them, the longest %v (%s: %s)",
			count(excused, "longer gap", "longer gaps"), round(longest.gap), longest.ep, longest.why)
	}
	scope += "; " + count(paused, "pause or removal", "pauses or removals") + " judged"
	return c.result(InvLiveness, opts.MaxViolations,
		"every active endpoint was polled and no paused session was: "+scope,
		count(len(c.list), "liveness violation", "liveness violations")+" (starved endpoints or paused sessions polled): "+scope)
}

// excusedGap is the longest gap over the liveness limit that faults excused.
type excusedGap struct {
	gap     time.Duration
	ep, why string
}

// gapsIn returns the gaps between the starts of successive polls that reached the resource in
// [from, to]: the first from `from` (the moment the endpoint became active), the last up to `to` (its
// next is nil).
func gapsIn(polls []*history.Event, from, to time.Duration) []gap {
	var out []gap
	cur := gap{from: from}
	i := sort.Search(len(polls), func(i int) bool { return polls[i].At >= from })
	for ; i < len(polls) && polls[i].At <= to; i++ {
		p := polls[i]
		if !reached(p) {
			continue
		}
		cur.to, cur.next = p.At, p
		out = append(out, cur)
		cur = gap{from: p.At, prev: p}
	}
	cur.to = to
	return append(out, cur)
}

// checkLivenessInSteadyWindows judges starvation as histories recorded before the bound table were: in
// each steady window, every endpoint active there is polled at least once every PollInterval+LeaseTTL.
func checkLivenessInSteadyWindows(idx *index, opts Options) Result {
	m := idx.meta
	slack := m.PollInterval + m.LeaseTTL
	eps := idx.pollEndpoints()
	var c collector
	if !idx.hasSessEv && m.Endpoints > len(idx.polls) {
		c.add(Violation{At: 0, Message: fmt.Sprintf("only %d of the %d endpoints were ever polled", len(idx.polls), m.Endpoints)})
	}
	judged := 0
	for _, w := range m.Steady {
		for _, ep := range eps {
			for _, a := range idx.activeIntervals(ep) {
				from, to := max(w.From, a.From), min(w.To, a.To)
				if from >= to {
					continue
				}
				judged++
				if v, ok := longestGap(idx.polls[ep], a.From, from, to); ok && v.gap > slack {
					viol := Violation{At: v.from, Endpoint: ep, From: v.from, To: v.to, Over: v.gap - slack,
						Message: fmt.Sprintf("%s was not polled for %v (from %v to %v) in the steady window %v..%v; allowed: poll interval + lease TTL = %v",
							ep, v.gap, v.from, v.to, w.From, w.To, slack)}
					for _, p := range []*history.Event{v.prev, v.next} {
						if p != nil {
							viol.Events = append(viol.Events, p.Seq)
							viol.Instances = append(viol.Instances, p.Instance)
						}
					}
					c.add(viol)
				}
			}
		}
	}
	paused := checkPausedSessions(idx, &c)

	scope := fmt.Sprintf("%d endpoint windows judged for starvation (slack %v); %d pauses or removals judged", judged, slack, paused)
	if len(m.Steady) == 0 {
		scope = fmt.Sprintf("no steady windows, so starvation was not judged; %d pauses or removals judged", paused)
	}
	return c.result(InvLiveness, opts.MaxViolations,
		"every active endpoint was polled and no paused session was: "+scope,
		count(len(c.list), "liveness violation", "liveness violations")+" (starved endpoints or paused sessions polled): "+scope)
}

type gap struct {
	from, to   time.Duration
	gap        time.Duration
	prev, next *history.Event
}

// longestGap returns the longest interval in [from, to] without a poll that reached the resource
// starting, counting from the last such poll in [since, from], if any.
func longestGap(polls []*history.Event, since, from, to time.Duration) (gap, bool) {
	i := sort.Search(len(polls), func(i int) bool { return polls[i].At > from })
	cur := gap{from: from}
	for j := i - 1; j >= 0 && polls[j].At >= since; j-- {
		if reached(polls[j]) {
			cur.from, cur.prev = polls[j].At, polls[j]
			break
		}
	}
	best, found := gap{}, false
	consider := func(g gap) {
		g.gap = g.to - g.from
		if !found || g.gap > best.gap {
			best, found = g, true
		}
	}
	for ; i < len(polls) && polls[i].At <= to; i++ {
		p := polls[i]
		if !reached(p) {
			continue
		}
		cur.to, cur.next = p.At, p
		consider(cur)
		cur = gap{from: p.At, prev: p}
	}
	cur.to = to
	consider(cur)
	return best, found
}

// checkPausedSessions adds a violation for each pause or removal after which the endpoint was polled
// too late, and returns how many pauses and removals it judged.
func checkPausedSessions(idx *index, c *collector) int {
	grace := pausedGrace(idx.meta.PollInterval, idx.meta.DiscoveryInterval)
	judged := 0
	for ep, evs := range idx.sessions {
		polls := idx.polls[ep]
		for k, e := range evs {
			if e.Session.Change != history.SessionPaused && e.Session.Change != history.SessionRemoved {
				continue
			}
			judged++
			until := idx.end
			for _, n := range evs[k+1:] {
				if n.Session.Change == history.SessionResumed || n.Session.Change == history.SessionAdded {
					until = n.At
					break
				}
			}
			limit := e.At + grace
			i := sort.Search(len(polls), func(i int) bool { return polls[i].At > limit })
			var late []*history.Event
			for ; i < len(polls) && polls[i].At < until; i++ {
				late = append(late, polls[i])
			}
			if len(late) == 0 {
				continue
			}
			p := late[0]
			c.add(Violation{At: p.At, Endpoint: ep, Instances: []string{p.Instance}, Events: []int64{e.Seq, p.Seq},
				From: e.At, To: p.At, Over: p.At - limit,
				Message: fmt.Sprintf("%s was %s at %v but %s polled it at %v (%d polls after the grace of %v)",
					ep, e.Session.Change, e.At, p.Instance, p.At, len(late), grace)})
		}
	}
	return judged
}

// fleetStart returns when the first instance started (its lifecycle "started" event), if one did.
func (idx *index) fleetStart() (time.Duration, bool) {
	for _, e := range idx.lifecycle {
		if e.Lifecycle.Change == history.LifeStarted {
			return e.At, true
		}
	}
	return 0, false
}
