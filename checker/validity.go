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

// ownedBy reports whether an operation's owner value identifies inst: the instance ID itself, or the
// instance ID followed by ":" and a per-holding suffix.
func ownedBy(owner, inst string) bool {
	return owner == inst || strings.HasPrefix(owner, inst+":")
}

// checkValidity judges, with no competitor needed, that every poll that reached the resource lies inside
// the poller's own lease: within [reply, request + TTL·(1 − drift bound)] of an acquire or renew of that
// endpoint by the poller that was confirmed (OK, with a reply), where TTL is the smaller of the lease TTL
// and the TTL the operation set. Windows that meet or overlap join, since a renewal confirmed inside one
// window carries the lease on. A poll cut short by its context may end up to TTL·drift bound later (see
// cutSlack). The bound is on the harness clock: the request cannot have reached the
// backend before it was sent, so its key lives at most until request + TTL, and a holder whose clock
// errs within the drift bound stops by request + TTL·(1 − drift bound).
//
// Skipped when the history holds no acquire or renew operations (a system whose backend calls are not
// modelled); a poller that never asked for an endpoint (no acquire or renew of it, whatever the answer)
// is left out for that endpoint and counted in the message.
func checkValidity(idx *index, opts Options) Result {
	type key struct{ inst, ep string }
	grants := map[key][]*history.Event{}
	tried := map[key]bool{} // the poller asked for the endpoint, whatever the answer
	anyGrant := false
	for _, e := range idx.ops {
		if e.Op.Kind != history.OpAcquire && e.Op.Kind != history.OpRenew {
			continue
		}
		anyGrant = true
		tried[key{e.Instance, e.Endpoint}] = true
		if !e.Op.OK || e.Op.Unknown || e.End == history.Infinity || e.End < e.At || e.Endpoint == "" ||
			!ownedBy(e.Op.Owner, e.Instance) {
			continue
		}
		k := key{e.Instance, e.Endpoint}
		grants[k] = append(grants[k], e)
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
				ws = validWindows(gs, ttl, drift)
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
		fmt.Sprintf("%d polls reached the resource outside their poller's confirmed lease [reply, request + TTL·(1 − drift bound)]%s", len(bad.list), note))
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
func validWindows(gs []*history.Event, ttl time.Duration, drift float64) []validWindow {
	var ws []validWindow
	for _, g := range gs {
		t := ttl
		if g.Op.TTL > 0 {
			t = min(t, g.Op.TTL)
		}
		w := validWindow{from: g.End, to: g.At + time.Duration(float64(t)*(1-drift)), last: g}
		if w.to > w.from {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b validWindow) int { return cmp.Compare(a.from, b.from) })
	var out []validWindow
	for _, w := range ws {
		if n := len(out); n > 0 && w.from <= out[n-1].to {
			if w.to > out[n-1].to {
				out[n-1].to, out[n-1].last = w.to, w.last
			}
			continue
		}
		out = append(out, w)
	}
	return out
}
