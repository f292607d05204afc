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

// checkLiveness judges two things:
//
//   - starvation: in each steady window, every endpoint active there is polled (a poll that reached the
//     resource starting) at least once every PollInterval+LeaseTTL: no gap between the window's start (or
//     the last poll before it), successive polls, and the window's end is longer. Without session events
//     every endpoint is active throughout, and when Meta.Endpoints exceeds the endpoints ever polled the
//     missing ones are reported too;
//   - paused and removed sessions: no poll (of any outcome) of an endpoint starts later than pausedGrace
//     after its pause or removal, until it is resumed or added again. A poll already in flight may finish.
func checkLiveness(idx *index, opts Options) Result {
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
					viol := Violation{At: v.from, Endpoint: ep,
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
		fmt.Sprintf("%d liveness violations (starved endpoints or paused sessions polled): %s", len(c.list), scope))
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
				Message: fmt.Sprintf("%s was %s at %v but %s polled it at %v (%d polls after the grace of %v)",
					ep, e.Session.Change, e.At, p.Instance, p.At, len(late), grace)})
		}
	}
	return judged
}
