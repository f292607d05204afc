package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Lag, honestly. The harness measures its own lateness through a run (history.Lag): a canary timer, the
// Go scheduler's latency, the backend's answer to the harness's own PING. On a starved machine a timing
// verdict can fail for a reason that is not the system's. A timing finding (failover, balance, liveness)
// is inconclusive — moved from the violations to Result.Inconclusive, never a pass — only when:
//
//   - the lag lay inside the stretch the system was expected to act in: its lateness began before the
//     finding's deadline and ended after the obligation began (the end of the holding a takeover
//     follows, the poll a cadence runs from); lag before it delayed nothing the finding depends on, and
//     lag after the deadline cannot have made the system miss it;
//   - the lag can account for how far the finding went over, in proportion: the time the harness was
//     measured late inside that stretch, window by window (a window's lateness counted once, whichever
//     signal saw it), reaches the overrun. One stall of 500 ms delays whatever waits on it by 500 ms at
//     most, however many hand-offs wait behind it;
//   - the system did not cause it: lateness that covered a window in which the system's own processes
//     used at least a CPU of the machine's (process systems, whose CPU is measured) is charged to the
//     system, not the machine.
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
			case v.Over > f.Covered:
				v.Message += fmt.Sprintf(" (%s: too little to account for %v over its deadline)", f, v.Over.Round(time.Millisecond))
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

// lagBefore returns the harness lag above LagThreshold that lay inside v's stretch (its lateness began
// before v's deadline, v.To − v.Over, and ended after v.From, when the obligation began): the worst value
// (Max, At, Source) and the lateness it covered inside the stretch, window by window (Covered). A window's
// lateness, observed at its end, covered [observed−value, observed], within [At−value, At+Window]; a window
// counts once, with its worst signal. Backend pings overlapping a fault of the backend measure the fault,
// and are left out; so is lateness that covered a window the system's own processes starved, which sys
// then describes.
func lagBefore(m *model, lag *history.Lag, v Violation) (best LagFinding, sys string, ok bool) {
	if v.To <= v.From {
		return LagFinding{}, "", false
	}
	deadline := v.To - max(v.Over, 0)
	lo, hi := v.From, deadline
	starved := func(from, to time.Duration) (time.Duration, bool) {
		for _, s := range lag.Samples {
			if s.At+lag.Window > from && s.At <= to && systemStarved(lag, s) {
				return s.System, true
			}
		}
		return 0, false
	}
	var charged time.Duration
	// Each sample's lateness lies somewhere in [its window's start − the lateness, the window's end]:
	// lateness that different signals (or windows) saw in one stretch may be one stall seen twice, so
	// the lateness a stretch of overlapping envelopes holds is at most its length.
	type late struct {
		env span
		val time.Duration
	}
	var lates []late
	for _, s := range lag.Samples {
		val, source := time.Duration(0), ""
		for _, c := range []struct {
			v   time.Duration
			src string
		}{{s.Canary, LagCanary}, {s.Sched, LagScheduler}, {s.Ping, LagPing}} {
			if c.v <= LagThreshold || c.v <= val {
				continue
			}
			if c.src == LagPing && duringBackendFault(m, s.At-c.v, s.At+lag.Window) {
				continue
			}
			val, source = c.v, c.src
		}
		from, to := s.At-val, s.At+lag.Window
		if val == 0 || from > hi || to < lo {
			continue
		}
		if used, ok := starved(from, s.At); ok {
			charged = max(charged, used)
			continue
		}
		env := span{max(from, lo), min(to, v.To)}
		lates = append(lates, late{env, min(val, env.to-env.from)})
		if val > best.Max {
			best.Max, best.At, best.Source = val, s.At, source
		}
	}
	slices.SortFunc(lates, func(a, b late) int { return cmp.Compare(a.env.from, b.env.from) })
	for i := 0; i < len(lates); {
		comp, sum := lates[i].env, lates[i].val
		j := i + 1
		for ; j < len(lates) && lates[j].env.from <= comp.to; j++ {
			comp.to = max(comp.to, lates[j].env.to)
			sum += lates[j].val
		}
		best.Covered += min(sum, comp.to-comp.from)
		i = j
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
