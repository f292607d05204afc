package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// LagThreshold is the harness lag above which a timing verdict cannot be trusted: SchedulingAllowance,
// the lag FailoverTolerance allows at each of the Handoffs hand-offs it covers (ExpiryTick + 4 × 25 ms).
// The tolerance is the scheduling allowance of every timing bound the checker holds a system to (the
// bound table, the scale-change and shard cadence gaps, the liveness limit); balance rests on the same
// goroutines running when due. When the harness itself — a canary timer, any goroutine of the process,
// or the backend's answer to the harness's own PING — ran later than that inside the window a timing
// violation depends on, the allowance was spent by the machine, and the run cannot tell the system's
// lateness from the harness's.
const LagThreshold = SchedulingAllowance

// timingInvariants are the invariants whose violations lag can explain. Safety invariants
// (single-holder, single-poller, stale-poll, validity, linearizability, fencing) never are: an overlap
// is an overlap however late anyone ran, and a system must be safe on a slow machine.
var timingInvariants = map[string]bool{InvFailover: true, InvBalance: true, InvLiveness: true, InvBlindWrite: true}

// Lag sources, as LagFinding.Source names them.
const (
	LagCanary    = "canary timer"
	LagScheduler = "goroutine scheduling"
	LagPing      = "backend ping"
)

// LagFinding is the harness lag a timing finding coincided with: the worst value of any signal within
// a lag window of the finding's window.
type LagFinding struct {
	// Max is the lag, At the start of the window it was measured in, Source which signal measured it.
	Max    time.Duration `json:"max"`
	At     time.Duration `json:"at"`
	Source string        `json:"source"`
}

func (f LagFinding) String() string {
	return fmt.Sprintf("harness lag %v (%s, at %v)", f.Max.Round(time.Millisecond), f.Source, f.At)
}

// judgeLag is the pass after the checks: each listed violation of a timing invariant that has a window
// and coincided with harness lag above LagThreshold becomes inconclusive — moved from Violations to
// Inconclusive with the lag — when the lag can account for it: it went over its bound by no more than
// Handoffs times the lag (each hand-off of the path as late as the worst measured). A takeover two
// seconds late beside 40 ms of lag is the system's, and stays a violation, its message saying so. A
// result left with only inconclusive findings is Inconclusive. A history without lag data (schema 1)
// is judged as before.
func judgeLag(idx *index, rep *Report) {
	lag := idx.meta.Lag
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
			f, ok := lagDuring(idx, lag, v)
			switch {
			case !ok:
				keep = append(keep, v)
			case v.Over > Handoffs*f.Max:
				v.Message += fmt.Sprintf(" (%s nearby: too little to account for %v over the bound)", f, v.Over.Round(time.Millisecond))
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
		note := fmt.Sprintf("%d findings coincided with harness lag above %v (the worst: %v, %s, at %v), so the run cannot tell the system's lateness from the harness's",
			len(res.Inconclusive), LagThreshold, worst.Max.Round(time.Millisecond), worst.Source, worst.At)
		if len(keep) == 0 && res.Truncated == 0 {
			res.Outcome = Inconclusive
			res.Message = note + "; " + res.Message
		} else {
			res.Message += "; " + note + ": inconclusive, not counted"
		}
	}
}

// unscheduledPrefix begins the assumptions message of a run whose faults could not all be applied.
const unscheduledPrefix = "the run did not go as scheduled"

// judgeUnscheduledLag is judgeLag's counterpart for a run that did not go as scheduled: a fault that could
// not be applied because the system was not in the state it needs (nobody held the endpoint to crash,
// the leader to stop) makes the run Unknown, and the scenario's exercised invariant with it, since it
// showed nothing. When the harness ran late above LagThreshold within the lease TTL before each such
// fault — the span in which renewals keep a holder in place — the machine may have cost the system that
// state (a leader whose renewal outlasted its call bound steps down, by design), and the run is
// inconclusive instead: re-run, never counted as evidence either way. Whether the endpoint went unpolled
// meanwhile is still liveness's to judge.
func judgeUnscheduledLag(idx *index, rep *Report) {
	lag := idx.meta.Lag
	if lag == nil || len(lag.Samples) == 0 {
		return
	}
	var found []Violation
	for _, e := range idx.faults {
		if e.Fault.Err == "" {
			continue
		}
		v := Violation{At: e.At, From: max(0, e.At-idx.meta.LeaseTTL), To: e.At,
			Message: fmt.Sprintf("%s %s could not be applied: %s", e.Fault.ID, e.Fault.Name, e.Fault.Err)}
		f, ok := lagDuring(idx, lag, v)
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

// lagDuring returns the worst lag above LagThreshold within one lag window of v's window, if any. A
// sample's value is attributed to the window in which it was observed, so the lateness it measures
// lies in [At-value, At+Window]; the margin of one window on each side of v's covers a scheduler
// reading that straddles a window's edge. Backend pings overlapping a fault of the backend (one
// without targets: a Redis restart or pause, a primary killed) measure the fault, and are left out.
func lagDuring(idx *index, lag *history.Lag, v Violation) (LagFinding, bool) {
	if v.To <= v.From {
		return LagFinding{}, false
	}
	lo, hi := v.From-lag.Window, v.To+lag.Window
	var best LagFinding
	consider := func(s history.LagSample, val time.Duration, source string) {
		if val <= LagThreshold || val <= best.Max || s.At-val > hi || s.At+lag.Window < lo {
			return
		}
		if source == LagPing && duringBackendFault(idx, s.At-val, s.At+lag.Window) {
			return
		}
		best = LagFinding{Max: val, At: s.At, Source: source}
	}
	for _, s := range lag.Samples {
		consider(s, s.Canary, LagCanary)
		consider(s, s.Sched, LagScheduler)
		consider(s, s.Ping, LagPing)
	}
	return best, best.Max > 0
}

// duringBackendFault reports whether a fault without targets (the backend's, or every instance's)
// overlaps [from, to].
func duringBackendFault(idx *index, from, to time.Duration) bool {
	for _, f := range idx.faults {
		if len(f.Fault.Targets) == 0 && f.At <= to && idx.faultEnd(f) >= from {
			return true
		}
	}
	return false
}
