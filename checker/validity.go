package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// validWindow is a stretch of run time in which an instance's own confirmed acquisitions and renewals
// entitle it to act on an endpoint.
type validWindow struct {
	from, to time.Duration
	last     *history.Event // the operation that set to
}

// opaqueOwner reports whether an owner value that does not carry inst's ID is still inst's own: a
// concrete value (not history.AnyOwner) that names no other instance of the run. Libraries write a
// random token of their own as the lock's value (redis-py's Lock, redlock); the instance that sent the
// acquire and saw it succeed holds that value.
func (idx *index) opaqueOwner(owner, inst string) bool {
	if owner == "" || owner == history.AnyOwner {
		return false
	}
	for _, other := range idx.instances {
		if other != inst && strings.Contains(owner, other) {
			return false
		}
	}
	return true
}

// ownedBy reports whether an operation's owner value identifies inst: the instance ID itself, or the
// instance ID followed by ":" and a per-holding suffix.
func ownedBy(owner, inst string) bool {
	return owner == inst || strings.HasPrefix(owner, inst+":")
}

// checkValidity judges, with no competitor needed, that every poll that reached the resource lies inside
// the poller's own lease: within [reply, request + TTL·(1 − drift bound)] of an acquire or renew of that
// endpoint by the poller that was confirmed (OK, with a reply, and, when the system confirms writes with
// WAIT, replicated: not history.Op.NotReplicated), where TTL is the smaller of the lease TTL
// and the TTL the operation set. Windows that meet or overlap join, since a renewal confirmed inside one
// window carries the lease on. A poll cut short by its context may end up to TTL·drift bound later (see
// cutSlack). The bound is on the harness clock: the request cannot have reached the
// backend before it was sent, so its key lives at most until request + TTL, and a holder whose clock
// errs within the drift bound stops by request + TTL·(1 − drift bound).
//
// An unconditional renewal (PEXPIRE, owner history.AnyOwner) counts for its sender only when it was
// confirmed inside the sender's own window (see validWindows): designs that renew by GET then EXPIRE
// are judged on what they do, not refused every renewal.
//
// Skipped when the history holds no acquire or renew operations (a system whose backend calls are not
// modelled); a poller that never asked for an endpoint (no acquire or renew of it, whatever the answer)
// is left out for that endpoint and counted in the message.
func checkValidity(idx *index, opts Options) Result {
	type key struct{ inst, ep string }
	grants := map[key][]*history.Event{}
	blind := map[key][]*history.Event{} // confirmed unconditional renewals (PEXPIRE), by whom sent them
	tried := map[key]bool{}             // the poller asked for the endpoint, whatever the answer
	anyGrant := false
	for _, e := range idx.ops {
		if e.Op.Kind != history.OpAcquire && e.Op.Kind != history.OpRenew {
			continue
		}
		anyGrant = true
		tried[key{e.Instance, e.Endpoint}] = true
		// A write WAIT did not confirm (NotReplicated) is no confirmed lease: a failover may discard it,
		// and a system that waits for WAIT does not count it.
		if !e.Op.OK || e.Op.Unknown || e.Op.NotReplicated || e.End == history.Infinity || e.End < e.At || e.Endpoint == "" {
			continue
		}
		k := key{e.Instance, e.Endpoint}
		switch {
		case ownedBy(e.Op.Owner, e.Instance) || idx.opaqueOwner(e.Op.Owner, e.Instance):
			grants[k] = append(grants[k], e)
		case e.Op.Kind == history.OpRenew && e.Op.Owner == history.AnyOwner:
			blind[k] = append(blind[k], e)
		}
	}
	if !anyGrant {
		return Result{Invariant: InvValidity, Outcome: Skipped,
			Message: "the history holds no acquire or renew operations (the system's backend calls are not modelled), so no poll can be tied to a lease"}
	}
	ttl := idx.meta.LeaseTTL
	drift := idx.meta.Assumptions.DriftBound
	var bad collector
	judged, unjudged := 0, map[key]bool{}
	for _, ep := range idx.pollEndpoints() {
		windows := map[string][]validWindow{}
		for _, p := range idx.polls[ep] {
			if !reached(p) {
				continue
			}
			k := key{p.Instance, ep}
			if !tried[k] {
				unjudged[k] = true
				continue
			}
			gs := grants[k]
			ws, ok := windows[p.Instance]
			if !ok {
				ws = validWindows(gs, blind[k], ttl, drift)
				windows[p.Instance] = ws
			}
			judged++
			i, found := slices.BinarySearchFunc(ws, p.At, func(w validWindow, t time.Duration) int {
				switch {
				case w.to < t:
					return -1
				case w.from > t:
					return 1
				}
				return 0
			})
			if found && pollEnd(p) <= ws[i].to+cutSlack(p, ttl, drift) {
				continue
			}
			v := Violation{At: p.At, Endpoint: ep, Instances: []string{p.Instance}, Events: []int64{p.Seq},
				ReachedResource: true}
			switch {
			case found:
				last := ws[i].last
				v.Events = append(v.Events, last.Seq)
				v.Message = fmt.Sprintf("%s polled %s at [%v, %v], past the end of its lease at %v (%s sent at %v, confirmed at %v, TTL %v, drift bound %g)",
					p.Instance, ep, p.At, pollEnd(p), ws[i].to, last.Op.Kind, last.At, last.End, ttl, drift)
			case i > 0:
				last := ws[i-1].last
				v.Events = append(v.Events, last.Seq)
				v.Message = fmt.Sprintf("%s polled %s at %v with no lease: its last confirmed %s (sent at %v, confirmed at %v) was valid until %v",
					p.Instance, ep, p.At, last.Op.Kind, last.At, last.End, ws[i-1].to)
			case len(ws) > 0:
				v.Message = fmt.Sprintf("%s polled %s at %v before any acquisition of it was confirmed (first at %v)",
					p.Instance, ep, p.At, ws[0].from)
			default:
				v.Message = fmt.Sprintf("%s polled %s at %v, but none of its acquisitions or renewals of it was confirmed",
					p.Instance, ep, p.At)
			}
			v.Outside = idx.scope.involved(p.At, pollEnd(p), p.Instance)
			bad.add(v)
		}
	}
	note := ""
	if len(unjudged) > 0 {
		note = fmt.Sprintf("; %d pollers of an endpoint recorded no acquire or renew of it and were not judged", len(unjudged))
	}
	if judged == 0 {
		return Result{Invariant: InvValidity, Outcome: Skipped,
			Message: "no poll that reached the resource can be tied to its poller's recorded acquisitions" + note}
	}
	return bad.result(InvValidity, opts.MaxViolations,
		fmt.Sprintf("all %d judged polls lay inside their poller's confirmed lease%s", judged, note),
		fmt.Sprintf("%s reached the resource outside the poller's confirmed lease [reply, request + TTL·(1 − drift bound)]%s", count(len(bad.list), "poll", "polls"), note))
}

// cutSlack is how far a poll cut short by its context may end past the validity bound: the system cuts
// it at its own deadline, but the harness stamps the end only when it sees the cancellation, so its own
// scheduling delay shows there. The slack stops where the key itself may expire (request + TTL), past
// which another holder may have been granted the endpoint.
func cutSlack(p *history.Event, ttl time.Duration, drift float64) time.Duration {
	if p.Poll.Outcome != history.PollCancelled {
		return 0
	}
	return time.Duration(float64(ttl) * drift)
}

// validWindows turns confirmed grants into joined windows, sorted by start.
func validWindows(gs, blind []*history.Event, ttl time.Duration, drift float64) []validWindow {
	window := func(g *history.Event) validWindow {
		t := ttl
		if g.Op.TTL > 0 {
			t = min(t, g.Op.TTL)
		}
		return validWindow{from: g.End, to: g.At + time.Duration(float64(t)*(1-drift)), last: g}
	}
	type candidate struct {
		w     validWindow
		blind bool
	}
	var cs []candidate
	for _, g := range gs {
		cs = append(cs, candidate{window(g), false})
	}
	for _, g := range blind {
		cs = append(cs, candidate{window(g), true})
	}
	slices.SortStableFunc(cs, func(a, b candidate) int { return cmp.Compare(a.w.from, b.w.from) })
	var out []validWindow
	for _, c := range cs {
		w := c.w
		if w.to <= w.from {
			continue
		}
		n := len(out)
		joins := n > 0 && w.from <= out[n-1].to
		// An unconditional renewal extends whoever holds the key: it extends the sender's own lease only
		// when its reply came while that lease, by the sender's earlier confirmed grants, still held. The
		// key then still named the sender when the renewal was applied (the key lives at least until its
		// grant's request plus TTL, past the window's end). Windows are visited in order of their start, so
		// only the last one can contain this reply. A backend that lost the key in between (a restart)
		// and granted it to another is beyond this check: single-holder and single-poller judge that.
		if c.blind && !joins {
			continue
		}
		if joins {
			if w.to > out[n-1].to {
				out[n-1].to, out[n-1].last = w.to, w.last
			}
			continue
		}
		out = append(out, w)
	}
	return out
}
