package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// pausedGrace is how long after a session's pause or removal a poll may still start: the system learns of
// it within its detection latency, and a poll it had already decided may start up to a poll interval
// after the one before; plus the tolerance.
func pausedGrace(f figures) time.Duration {
	return f.detect() + f.pollInterval + FailoverTolerance
}

// checkLiveness judges every gap between valid polls that no fault on the holder explains (failover
// judges those): every active endpoint is owed its next valid poll by the deadline the model derives
// (see owed.go), at every moment of the run. It also judges paused and removed sessions: no poll (of
// any outcome) of an endpoint starts later than pausedGrace after its pause or removal, until it is
// resumed or added again.
func checkLiveness(m *model, gaps []gapJudgement, opts Options) Result {
	var c collector
	if !m.hasSessEv && m.meta.Endpoints > len(m.polls) {
		c.add(Violation{At: 0, Message: fmt.Sprintf("only %d of the %d endpoints were ever polled", len(m.polls), m.meta.Endpoints)})
	}
	judged, onTick := 0, 0
	var longest *gapJudgement
	for i := range gaps {
		g := &gaps[i]
		if g.take != nil && g.take.cause != nil && g.ob.kind == g.take.kind {
			continue // failover's
		}
		judged++
		if g.late && m.tickedTakeover(g) {
			onTick++
			continue
		}
		if !g.late {
			if !g.open && (longest == nil || g.to-g.from > longest.to-longest.from) {
				longest = g
			}
			continue
		}
		what := fmt.Sprintf("%s was not polled for %v (from %v to %v)", g.ep, round(g.to-g.from), round(g.from), round(g.to))
		if g.open {
			what = fmt.Sprintf("%s was not polled after %v (judged until %v)", g.ep, round(g.from), round(g.to))
		}
		v := Violation{At: g.from, Endpoint: g.ep, From: g.ob.from, To: g.to, Over: g.to - g.ob.deadline,
			Message: fmt.Sprintf("%s; owed by %v (%s: %s)", what, round(g.ob.deadline), g.ob.kind, strings.Join(g.ob.why, "; "))}
		for _, p := range []*history.Event{g.prev, g.next} {
			if p != nil {
				v.Events = append(v.Events, p.Seq)
				v.Instances = append(v.Instances, p.Instance)
			}
		}
		c.add(v)
	}
	var caught collector
	paused := checkPausedSessions(m, &c, &caught)
	scope := "no timing recorded (an older history), so starvation was not judged"
	if m.fig.timed {
		scope = fmt.Sprintf("%s judged against the deadlines the model derives", count(judged, "gap between valid polls", "gaps between valid polls"))
		if longest != nil && longest.to-longest.from > m.fig.cadence() {
			scope += fmt.Sprintf("; the longest within its deadline %v (%s from %v: %s)", round(longest.to-longest.from), longest.ep, round(longest.from), longest.ob.kind)
		}
	}
	if onTick > 0 {
		scope += fmt.Sprintf("; %s past the deadline by less than the system's declared tick (%v), each at the first attempt sent after it",
			count(onTick, "takeover came", "takeovers came"), round(m.meta.Tick))
	}
	scope += "; " + count(paused, "pause or removal", "pauses or removals") + " judged"
	return verdict(InvLiveness, opts.MaxViolations, &c, &caught,
		"every active endpoint was polled when owed and no paused session was: "+scope,
		count(len(caught.list), "paused session was", "paused sessions were")+" polled by a poll a fault outside the assumptions held back: "+scope,
		count(len(c.list), "liveness violation", "liveness violations")+" (endpoints unpolled past their deadline, or paused sessions polled): "+scope)
}

// tickedTakeover reports whether a late takeover gap is the system's declared tick, not an endpoint
// stuck: the system says it looks for free endpoints every Meta.Tick, the takeover came less than a
// tick past its deadline, and the history shows the tick was all that held it back: the first acquire
// of the endpoint sent after the deadline (by anyone) is the one that granted it, and the taker polled
// within a poll cadence of that grant. An acquire refused after the deadline (the key still held by
// something) or a grant the taker sat on is a stuck endpoint, whatever the tick.
func (m *model) tickedTakeover(g *gapJudgement) bool {
	tick := m.meta.Tick
	if tick <= 0 || g.take == nil || g.ob.kind != g.take.kind || g.open || g.next == nil || g.to-g.ob.deadline > tick {
		return false
	}
	for _, e := range m.opsOf(g.ep) {
		if e.Op.Kind != history.OpAcquire || e.At < g.ob.deadline-FailoverTolerance || e.At > g.to {
			continue
		}
		// The first acquire sent after the deadline: it must be the grant the taker polled on.
		return e.Op.OK && !e.Op.Unknown && e.Instance == g.next.Instance && g.to-e.End <= m.fig.cadence()
	}
	return false
}

// checkPausedSessions adds a violation for each pause or removal after which the endpoint was polled
// too late, and returns how many pauses and removals it judged.
func checkPausedSessions(m *model, c, caught *collector) int {
	grace := pausedGrace(m.fig)
	judged := 0
	for ep, evs := range m.sessions {
		polls := m.polls[ep]
		for k, e := range evs {
			if e.Session.Change != history.SessionPaused && e.Session.Change != history.SessionRemoved {
				continue
			}
			judged++
			until := m.end
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
			v := Violation{At: p.At, Endpoint: ep, Instances: []string{p.Instance}, Events: []int64{e.Seq, p.Seq},
				From: e.At, To: p.At, Over: p.At - limit,
				Message: fmt.Sprintf("%s was %s at %v but %s polled it at %v (%d polls after the grace of %v: detection latency, a poll interval and the tolerance)",
					ep, e.Session.Change, e.At, p.Instance, p.At, len(late), grace)}
			// A poll a freeze held from before the pause (it goes out on waking) is the freeze's doing,
			// as far as the freeze's length reaches.
			if o := m.scope.explains(e.At, p.At, p.At-limit, p.Instance); len(o) > 0 && len(late) == 1 {
				v.Outside = o
				v.Message += "; outside the assumptions (" + strings.Join(o, ", ") + ")"
				caught.add(v)
				continue
			}
			c.add(v)
		}
	}
	return judged
}
