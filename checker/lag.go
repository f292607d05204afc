package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Lag, honestly. The harness measures its own lateness through a run (history.Lag): a canary timer, the
// Go scheduler's latency, the backend's answer to the harness's own PING. On a starved machine a timing
// verdict can fail for a reason that is not the system's. A timing finding (failover, balance, liveness)
// is inconclusive — moved from the violations to Result.Inconclusive, never a pass — only when:
//
//   - the lag was measured before the finding's deadline, inside the stretch the system was expected to
//     act in (lag after the deadline cannot have made the system miss it);
//   - the lag can account for how far the finding went over: at most Handoffs times the worst lag
//     measured (each hand-off of the path as late as the worst);
//   - the system did not cause it: a window in which the system's own processes used at least a CPU of
//     the machine's (process systems, whose CPU is measured) is charged to the system, not the machine.
//
// Safety verdicts and blind writes are never excused: an overlap is an overlap however late anyone ran,
// and a write sent after an unanswered call is a decision, not a timing.

// LagThreshold is the harness lag above which a timing verdict may be inconclusive: SchedulingAllowance,
// the lag FailoverTolerance allows at each of the Handoffs hand-offs it covers.
const LagThreshold = SchedulingAllowance

// timingInvariants are the invariants whose violations lag can explain.
var timingInvariants = map[string]bool{InvFailover: true, InvBalance: true, InvLiveness: true}

// Lag sources, as LagFinding.Source names them.
const (
	LagCanary    = "canary timer"
	LagScheduler = "goroutine scheduling"
	LagPing      = "backend ping"
)

// judgeLag is the pass after the checks: each listed violation of a timing invariant that has a window
// becomes inconclusive when lag above LagThreshold, measured before its deadline and not caused by the
// system, can account for it. A result left with only inconclusive findings is Inconclusive. A history
// without lag data is judged as it is.
func judgeLag(m *model, rep *Report) {
	lag := m.meta.Lag
	if lag == nil || len(lag.Samples) == 0 {
		return
	}
	for i := range rep.Results {
		res := &rep.Results[i]
		if !timingInvariants[res.Invariant] || res.Outcome != Violated {
			continue
		}
		var keep []Violation
		for _, v := range res.Violations {
			f, sys, ok := lagBefore(m, lag, v)
			switch {
			case !ok && sys != "":
				v.Message += " (" + sys + ")"
				keep = append(keep, v)
			case !ok:
				keep = append(keep, v)
			case v.Over > Handoffs*f.Max:
				v.Message += fmt.Sprintf(" (%s before its deadline: too little to account for %v over it)", f, v.Over.Round(time.Millisecond))
				keep = append(keep, v)
			default:
				v.Lag = &f
				res.Inconclusive = append(res.Inconclusive, v)
			}
		}
		res.Violations = keep
		if len(res.Inconclusive) == 0 {
			continue
		}
		worst := res.Inconclusive[0].Lag
		for _, v := range res.Inconclusive {
			if v.Lag.Max > worst.Max {
				worst = v.Lag
			}
		}
		note := fmt.Sprintf("%d findings coincided, before their deadlines, with harness lag above %v that can account for them (the worst: %v, %s, at %v), so the run cannot tell the system's lateness from the harness's",
			len(res.Inconclusive), LagThreshold, worst.Max.Round(time.Millisecond), worst.Source, worst.At)
		if len(keep) == 0 && res.Truncated == 0 {
			res.Outcome = Inconclusive
			res.Message = note + "; " + res.Message
		} else {
			res.Message += "; " + note + ": inconclusive, not counted"
		}
	}
}

// systemStarved reports whether, in sample s, the system's own processes used at least one CPU's worth of
// the window (of a machine with more than one): the lag then is the system's doing.
func systemStarved(lag *history.Lag, s history.LagSample) bool {
	return s.System > 0 && lag.CPUs > 0 && s.System >= lag.Window
}

// lagBefore returns the worst lag above LagThreshold within v's window up to its deadline (v.To − v.Over),
// with a margin of one lag window before it (a value is attributed to the window in which it was
// observed, when the lateness ended). Backend pings overlapping a fault of the backend measure the fault,
// and are left out; so are windows the system's own processes starved, which sys then describes.
func lagBefore(m *model, lag *history.Lag, v Violation) (best LagFinding, sys string, ok bool) {
	if v.To <= v.From {
		return LagFinding{}, "", false
	}
	deadline := v.To - max(v.Over, 0)
	lo, hi := v.From-lag.Window, deadline
	var charged time.Duration
	consider := func(s history.LagSample, val time.Duration, source string) {
		if val <= LagThreshold || val <= best.Max || s.At-val > hi || s.At+lag.Window < lo {
			return
		}
		if source == LagPing && duringBackendFault(m, s.At-val, s.At+lag.Window) {
			return
		}
		if systemStarved(lag, s) {
			charged = max(charged, s.System)
			return
		}
		best = LagFinding{Max: val, At: s.At, Source: source}
	}
	for _, s := range lag.Samples {
		consider(s, s.Canary, LagCanary)
		consider(s, s.Sched, LagScheduler)
		consider(s, s.Ping, LagPing)
	}
	if charged > 0 && best.Max == 0 {
		sys = fmt.Sprintf("the harness ran late there, but the system's own processes used %v of CPU in a %v window of a %d-CPU machine: that lag is the system's, and excuses nothing",
			charged.Round(time.Millisecond), lag.Window, lag.CPUs)
	}
	return best, sys, best.Max > 0
}

// duringBackendFault reports whether a fault without targets (the backend's, or every instance's)
// overlaps [from, to].
func duringBackendFault(m *model, from, to time.Duration) bool {
	for _, f := range m.faults {
		if len(f.Fault.Targets) == 0 && f.At <= to && m.faultEnd(f) >= from {
			return true
		}
	}
	return false
}

// judgeUnscheduledLag is judgeLag's counterpart for a run that did not go as scheduled: a fault that could
// not be applied because the system was not in the state it needs (nobody held the endpoint to crash,
// the leader to stop) makes the run Unknown, and the scenario's exercised invariant with it. When the
// harness ran late above LagThreshold (and not by the system's doing) within the lease TTL before each
// such fault — the span in which renewals keep a holder in place — the machine may have cost the system
// that state, and the run is inconclusive instead.
func judgeUnscheduledLag(m *model, rep *Report) {
	lag := m.meta.Lag
	if lag == nil || len(lag.Samples) == 0 {
		return
	}
	var found []Violation
	for _, e := range m.faults {
		if e.Fault.Err == "" {
			continue
		}
		v := Violation{At: e.At, From: max(0, e.At-m.meta.LeaseTTL), To: e.At,
			Message: fmt.Sprintf("%s %s could not be applied: %s", e.Fault.ID, e.Fault.Name, e.Fault.Err)}
		f, _, ok := lagBefore(m, lag, v)
		if !ok {
			return // a fault the machine cannot account for: Unknown stands
		}
		v.Lag = &f
		found = append(found, v)
	}
	if len(found) == 0 {
		return
	}
	for i := range rep.Results {
		res := &rep.Results[i]
		if res.Outcome != Unknown {
			continue
		}
		exercised := strings.HasPrefix(res.Message, exercisedPrefix)
		if !exercised && (res.Invariant != InvAssumptions || !strings.HasPrefix(res.Message, unscheduledPrefix)) {
			continue
		}
		res.Outcome = Inconclusive
		res.Inconclusive = append(res.Inconclusive, found...)
		res.Message = fmt.Sprintf("the harness ran late before a fault it could not apply (%s): the machine may have cost the system the state the fault needed; %s",
			found[0].Lag, res.Message)
	}
}
