package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// checkValidity judges, with no competitor needed, that every poll that reached the resource lies inside
// the poller's own confirmed lease (see leases.go): within [reply, request + TTL·(1 − drift bound)] of
// an acquire or renewal of that endpoint by the poller that it saw succeed. A poll by an instance that
// holds no lease of the endpoint at all — that never asked for it, or was never granted it — is a
// violation like any other: whoever polls without a lease polls unsafely.
//
// A system whose backend calls are not modelled (the history holds no acquire or renew operations) is
// judged by its beliefs instead: a poll must begin inside a belief of its poller. Skipped when it
// reports none either.
func checkValidity(m *model, opts Options) Result {
	if !m.ls.any {
		return checkBelievedPolls(m, opts)
	}
	ttl := m.meta.LeaseTTL
	drift := m.meta.Assumptions.DriftBound
	var bad collector
	judged, never := 0, 0
	for _, ep := range m.pollEndpoints() {
		for _, p := range m.polls[ep] {
			if !reached(p) {
				continue
			}
			judged++
			if m.ls.valid(p, ttl, drift) {
				continue
			}
			k := leaseKey{p.Instance, ep}
			ws := m.ls.windows[k]
			w, i, found := m.ls.at(p.Instance, ep, p.At)
			v := Violation{At: p.At, Endpoint: ep, Instances: []string{p.Instance}, Events: []int64{p.Seq},
				ReachedResource: true}
			switch {
			case found:
				v.Events = append(v.Events, w.last.Seq)
				v.Message = fmt.Sprintf("%s polled %s at [%v, %v], past the end of its lease at %v (%s sent at %v, confirmed at %v, TTL %v, drift bound %g)",
					p.Instance, ep, p.At, pollEnd(p), w.to, w.last.Op.Kind, w.last.At, w.last.End, ttl, drift)
			case i > 0:
				last := ws[i-1].last
				v.Events = append(v.Events, last.Seq)
				v.Message = fmt.Sprintf("%s polled %s at %v with no lease: its last confirmed %s (sent at %v, confirmed at %v) was valid until %v",
					p.Instance, ep, p.At, last.Op.Kind, last.At, last.End, ws[i-1].to)
			case len(ws) > 0:
				v.Message = fmt.Sprintf("%s polled %s at %v before any acquisition of it was confirmed (first at %v)",
					p.Instance, ep, p.At, ws[0].from)
			case m.ls.tried[k]:
				v.Message = fmt.Sprintf("%s polled %s at %v, but none of its acquisitions or renewals of it was confirmed",
					p.Instance, ep, p.At)
			default:
				never++
				v.Message = fmt.Sprintf("%s polled %s at %v, but it never asked for a lease of it: no acquire or renewal of %s by %s is recorded",
					p.Instance, ep, p.At, ep, p.Instance)
			}
			if o := m.scope.touchedBy(p.At, pollEnd(p), p.Instance); len(o) > 0 {
				v.Outside = o
				v.Message += "; outside the assumptions (" + strings.Join(o, ", ") + "), but it reached the resource"
			}
			bad.add(v)
		}
	}
	note := ""
	if never > 0 {
		note = fmt.Sprintf("; %s made by instances that never asked for the endpoint", count(never, "poll was", "polls were"))
	}
	return bad.result(InvValidity, opts.MaxViolations,
		fmt.Sprintf("all %d polls lay inside their poller's confirmed lease", judged),
		fmt.Sprintf("%s reached the resource outside the poller's confirmed lease [reply, request + TTL·(1 − drift bound) of its clock]%s", count(len(bad.list), "poll", "polls"), note))
}

// checkBelievedPolls is checkValidity for a system whose backend calls are not modelled: a poll that
// reached the resource must have begun while its poller believed it held the endpoint. Whether the
// belief was right is what single-holder and fencing judge; a poll by an instance that believed nothing
// is unsafe whatever the backend did.
func checkBelievedPolls(m *model, opts Options) Result {
	if len(m.beliefs) == 0 {
		return Result{Invariant: InvValidity, Outcome: Skipped,
			Message: "the history holds no acquire or renew operations (the system's backend calls are not modelled) and no beliefs, so no poll can be tied to a holding"}
	}
	var bad, caught collector
	judged := 0
	for _, ep := range m.pollEndpoints() {
		bs := m.believed(ep)
		for _, p := range m.polls[ep] {
			if !reached(p) {
				continue
			}
			judged++
			// A poll the system cancels as its belief ends reaches the endpoint as the belief ends: the
			// harness stamps it a moment later (a pause's wake: the poll decided before it arrives, and
			// the watchdog cancels it).
			slack := time.Duration(0)
			if p.Poll.Outcome == history.PollCancelled {
				slack = SchedulingAllowance
			}
			inside := false
			var last *belief // the poller's last belief begun before the poll
			for i, b := range bs {
				if b.inst != p.Instance || b.from > p.At {
					continue
				}
				if p.At <= b.to+slack {
					inside = true
					break
				}
				if last == nil || b.from > last.from {
					last = &bs[i]
				}
			}
			if inside {
				continue
			}
			v := Violation{At: p.At, Endpoint: ep, Instances: []string{p.Instance}, Events: []int64{p.Seq}, ReachedResource: true,
				Message: fmt.Sprintf("%s polled %s at %v holding no lease of it: it reported no belief of it then (the backend's calls are not modelled: the poller's beliefs stand for its holdings)",
					p.Instance, ep, p.At)}
			// A poll decided inside a belief and held past its end by a fault outside the assumptions
			// (a pause: it goes out on waking) is that fault's doing, as far as the fault reaches; what
			// it did at the resource is single-poller's and stale-poll's to judge.
			if last != nil {
				if o := m.scope.explains(last.to, pollEnd(p), pollEnd(p)-last.to, p.Instance); len(o) > 0 {
					v.Outside = o
					v.Message += fmt.Sprintf("; its belief ended at %v, and %s held the poll past it (outside the assumptions)", last.to, strings.Join(o, ", "))
					caught.add(v)
					continue
				}
			}
			if o := m.scope.touchedBy(p.At, pollEnd(p), p.Instance); len(o) > 0 {
				v.Outside = o
				v.Message += "; outside the assumptions (" + strings.Join(o, ", ") + "), but it reached the resource"
			}
			bad.add(v)
		}
	}
	return verdict(InvValidity, opts.MaxViolations, &bad, &caught,
		fmt.Sprintf("all %d polls began inside a belief of their poller (the backend's calls are not modelled)", judged),
		fmt.Sprintf("%s decided inside a belief reached the resource after it ended, held there by a fault outside the assumptions", count(len(caught.list), "poll", "polls")),
		fmt.Sprintf("%s reached the resource from an instance that believed it held nothing", count(len(bad.list), "poll", "polls")))
}
