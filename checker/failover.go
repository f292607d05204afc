package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// checkFailover judges the takeovers that faults on a holder, and handoffs, made necessary: every gap
// (see owed.go) whose holding a fault on the holder ended — its crash or graceful stop, a pause that
// took hold, a call of its own left unanswered by a fault on its link or on the backend, a stall that
// let its lease run out — or that the holder released (a handoff, to rebalance or stopping) is a
// takeover, measured from the fault's start (a pause: from when it took hold; a handoff: from the
// release) to the next valid poll, and held to the deadline the model derives. Every other gap is
// liveness's to judge.
func checkFailover(m *model, gaps []gapJudgement, opts Options) (Result, []Failover) {
	if !m.fig.timed {
		return Result{Invariant: InvFailover, Outcome: Skipped,
			Message: "nothing to judge: an older history records no timing (call bound, intervals), from which the model derives deadlines; re-record it"}, nil
	}
	var c collector
	var out []Failover
	faults := map[string]bool{}
	for _, g := range gaps {
		if g.take == nil || g.take.cause == nil || g.take.deadline == history.Infinity {
			continue
		}
		ob := *g.take
		f := ob.cause.Fault
		if ob.effect == EffectHandoff {
			f = &history.Fault{ID: "handoff", Name: "release", Targets: []string{ob.holder}}
		}
		faults[f.ID] = true
		fo := Failover{FaultID: f.ID, Fault: f.Name, Endpoint: g.ep, From: ob.holder, FaultAt: ob.cause.At,
			MeasuredFrom: ob.measured, Latency: -1, Bound: ob.deadline - ob.measured, Class: string(ob.effect),
			Why: strings.Join(ob.why, "; ")}
		if g.next != nil {
			// A taker may poll before the holding it takes over was seen to end (its release sent after
			// its belief ended): its latency is nothing, not negative.
			fo.To, fo.PolledAt, fo.Latency = g.next.Instance, g.next.At, max(g.next.At-ob.measured, 0)
		}
		if g.open && !g.late {
			fo.Latency = -1 // the run ended before the deadline: not measured
		}
		out = append(out, fo)
		if !g.late || g.ob.kind != ob.kind {
			continue // in time, or late for another reason (a new holder that did not poll): liveness's
		}
		v := Violation{At: ob.cause.At, Endpoint: g.ep, Instances: []string{ob.holder}, Events: []int64{ob.cause.Seq},
			From: ob.from, To: g.to, Over: g.to - ob.deadline}
		if g.prev != nil {
			v.Events = append(v.Events, g.prev.Seq)
		}
		if g.next != nil {
			v.Instances = append(v.Instances, g.next.Instance)
			v.Events = append(v.Events, g.next.Seq)
			v.Message = fmt.Sprintf("%s on %s: %s was taken over by %s after %v, over its bound %v (%s)",
				f.Name, strings.Join(f.Targets, ","), g.ep, g.next.Instance, round(fo.Latency), round(fo.Bound), fo.Why)
			if tick := m.meta.Tick; tick > 0 && v.Over <= tick+FailoverTolerance {
				// The specification's bound decides; the system's own tick is the likely cause.
				v.Message += fmt.Sprintf("; %v late, within the system's declared tick: it looks for free endpoints every %v, so a takeover may wait that long after the key is free, and its own intervals imply a bound of %v beside the specification's %v",
					round(v.Over), round(tick), round(fo.Bound+tick), round(fo.Bound))
			}
		} else {
			v.Message = fmt.Sprintf("%s on %s: %s, last polled by %s at %v, was not polled again by %v (%s)",
				f.Name, strings.Join(f.Targets, ","), g.ep, ob.holder, round(g.from), round(g.to), fo.Why)
		}
		c.add(v)
	}
	releases := m.checkStopReleases(&c)
	if len(out) == 0 && releases == 0 {
		return Result{Invariant: InvFailover, Outcome: Skipped,
			Message: "nothing to judge: no fault on a holder ended its holding, and no holder handed an endpoint over"}, nil
	}
	var lat []time.Duration
	unmeasured := 0
	for _, fo := range out {
		if fo.Latency >= 0 {
			lat = append(lat, fo.Latency)
		} else {
			unmeasured++
		}
	}
	summary := count(len(lat), "takeover", "takeovers") + " after " + count(len(faults), "fault or handoff", "faults or handoffs")
	if len(lat) > 0 {
		slices.Sort(lat)
		summary += fmt.Sprintf(" (p50 %v, max %v)", round(percentile(lat, 50)), round(lat[len(lat)-1]))
	}
	summary += ", each against the deadline the model derives (" + boundsNote(out) + ")"
	if unmeasured > 0 {
		summary += "; " + count(unmeasured, "takeover", "takeovers") + " not measured: the run ended before its deadline"
	}
	if near := nearestBound(out); near != "" {
		summary += "; " + near
	}
	return c.result(InvFailover, opts.MaxViolations, summary+": all within their deadlines",
		count(len(c.list), "endpoint", "endpoints")+" went unpolled past the deadline after a fault on its holder; "+summary), out
}

// NearBound is how close to its bound, as a fraction of it, a measured takeover is said to be near it.
const NearBound = 0.05

// nearestBound names the measured takeover closest to its bound, when it lies within NearBound of it
// (either side): such a verdict may go the other way on another run of the same seed.
func nearestBound(fos []Failover) string {
	var best *Failover
	gap := func(fo *Failover) time.Duration { return (fo.Bound - fo.Latency).Abs() }
	for i := range fos {
		fo := &fos[i]
		if fo.Latency < 0 || fo.Bound <= 0 || float64(gap(fo)) > NearBound*float64(fo.Bound) {
			continue
		}
		if best == nil || gap(fo) < gap(best) {
			best = fo
		}
	}
	if best == nil {
		return ""
	}
	side := "inside"
	if best.Latency > best.Bound {
		side = "past"
	}
	return fmt.Sprintf("near its bound: %s's takeover came after %v against %v, %v %s it (%.1f%%); a verdict this near can go the other way on another run (simrun run --repeat N gives a pass rate)",
		best.Endpoint, round(best.Latency), round(best.Bound), round(gap(best)), side, 100*float64(gap(best))/float64(best.Bound))
}

// boundsNote lists the longest bound the takeovers were held to, per effect: "gone 3.101s, stopped 101ms".
func boundsNote(fos []Failover) string {
	longest := map[string]time.Duration{}
	var order []string
	for _, fo := range fos {
		if _, ok := longest[fo.Class]; !ok {
			order = append(order, fo.Class)
		}
		longest[fo.Class] = max(longest[fo.Class], fo.Bound)
	}
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s %v", c, round(longest[c]))
	}
	return strings.Join(parts, ", ")
}

// checkStopReleases judges what a graceful stop promises: every endpoint the stopping instance held (a
// confirmed lease, or a belief, when the stop began) is released — the release sent — within its poll in
// flight and its link's delay (or, if the backend was down then, as soon as it is back: see
// effects.releaseBy), so that the next owner need not wait for the lease to run out. A stop
// that releases nothing hands the others a TTL of waiting, which no later fault excuses. It returns how
// many endpoints it judged.
func (m *model) checkStopReleases(c *collector) int {
	judged := 0
	for _, in := range m.instances {
		ie := m.ef.inst[in]
		if ie == nil || !ie.graceful || ie.gone == history.Infinity {
			continue
		}
		s := ie.gone
		promise := m.ef.releaseBy(in, s) + FailoverTolerance
		for _, ep := range m.pollEndpoints() {
			w, _, leased := m.ls.at(in, ep, s)
			believed := false
			for _, b := range m.believed(ep) {
				if b.inst == in && b.from <= s && s < b.to {
					believed = true
				}
			}
			if !leased && !believed || !m.activeAt(ep, s) {
				continue
			}
			judged++
			// The release must be of what it held at the stop: sent after that value's grant, and of
			// that value (a release of an earlier holding, sent before, released nothing it held then).
			var rel *history.Event
			for _, e := range m.opsOf(ep) {
				if e.Instance != in || e.Op.Kind != history.OpRelease || e.At < s-m.fig.cadence() {
					continue
				}
				if leased && (e.At < w.first.At || !slices.Contains([]string{w.first.Op.Owner, w.last.Op.Owner, history.AnyOwner}, e.Op.Owner) &&
					w.last.Op.Owner != history.AnyOwner) {
					continue
				}
				rel = e
				break
			}
			if (rel != nil && rel.At <= promise) || (!m.rec.modelled(ep) && !m.ls.any) {
				continue // released; or a backend whose calls are not modelled, where no release shows
			}
			// A release sent late is a timing (harness lag may account for it, in proportion); one never
			// sent is a decision, which no lag excuses: that finding carries no window.
			v := Violation{At: s, Endpoint: ep, Instances: []string{in},
				Message: fmt.Sprintf("%s stopped gracefully at %v holding %s, and sent no release of it within its poll in flight and its link's delay (by %v): the next owner must wait for its lease to run out",
					in, round(s), ep, round(promise))}
			if rel != nil {
				v.From, v.To, v.Over = s, rel.At, rel.At-promise
				v.Message += fmt.Sprintf(" (it sent one at %v)", round(rel.At))
			}
			if ie.goneBy != nil {
				v.Events = []int64{ie.goneBy.Seq}
			}
			c.add(v)
		}
	}
	return judged
}
