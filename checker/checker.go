// Package checker judges a recorded history against Tenure's invariants: single holder, single poller,
// stale polls, validity, linearizability of the lease operations, failover time, balance, fencing and
// liveness.
//
// Check runs every invariant and returns one Result per invariant, assumptions first. A Result is a
// verdict with a message, never a bare boolean: Pass, Violated, Unknown (the checker could not decide, for
// example the linearizability search timed out, the run was interrupted, or it went beyond the system's
// assumptions without declaring it), Skipped (the invariant does not apply to the scenario, or an
// assumption it rests on failed), Caught (see below) or Inconclusive (a timing invariant broken only while
// the harness itself ran late: see LagThreshold). Unknown and Inconclusive never count as a pass.
//
// Mutual exclusion is judged at two levels and reported apart:
//   - beliefs (single-holder): no two instances believe they hold one endpoint at once. A belief ends at
//     its held=false event, the instance's crash or stop, or its recorded deadline, whichever comes first;
//   - the resource: no two holders' polls reached it (single-poller), no stale poll arrived even if
//     fencing refused it (stale-poll), every poll lies inside its poller's own confirmed lease (validity),
//     and tokens never go backwards, across backend wipes too (fencing).
//
// The history records the system's assumptions (drift bound, persistence, topology, fault classes
// declared outside them). Inside them each finding is a violation. A finding that a fault outside them
// explains is expected: Caught when nothing of it reached the resource (safe: it lets the run pass and
// is listed in Result.Caught, never among the violations), and still Violated when a stale poll
// reached the resource. A clock drifting beyond the drift bound lies outside the assumptions; a run
// that did not declare it gets an Unknown assumptions verdict, never a silent pass.
//
// What the verdicts rest on:
//   - all times are the harness's monotonic run times recorded in the history; instance clocks play no
//     part, so drifting instances are judged on the same time base (beliefs' deadlines are converted to
//     it by the recorder);
//   - a poll "reaches the resource" unless its outcome is refused (a stale fencing token);
//   - the bounds (lease TTL, failover bound, poll interval, steady windows, drift bound) come from the
//     history's Meta, so a saved history is judged as it was when recorded.
package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Check judges h against every invariant and returns the report. Results come in a fixed order:
// assumptions, single-holder, single-poller, stale-poll, validity, linearizability, failover, balance,
// fencing, liveness, blind-write.
//
// A pass after the checks weighs the timing violations (failover, balance, liveness) against the
// harness's own lag recorded in the history (Meta.Lag): one the lag can account for is Inconclusive,
// never a pass (see judgeLag and LagThreshold).
//
// When the assumptions fail (empty history, missing or invalid Meta, unsorted events, no polls) every
// later invariant is Skipped with the reason. When the run was interrupted the assumptions are Unknown;
// the safety invariants (single-holder, single-poller, stale-poll, validity, linearizability, fencing)
// are still judged, because a violation in a partial history is a real one, while failover, balance and
// liveness are Skipped.
func Check(h history.History, opts Options) Report {
	opts = opts.withDefaults()
	idx := newModel(newIndex(h))
	rep := Report{Ops: len(idx.ops), Polls: idx.pollCount, Refused: idx.refused}

	assume := timed(func() Result { return checkAssumptions(idx) })
	rep.Results = append(rep.Results, assume)

	skipAll := assume.Outcome == Violated
	skipLive := skipAll || h.Meta.Interrupted
	skipWhy := "skipped: " + assume.Message
	if !skipAll && h.Meta.Interrupted {
		skipWhy = "skipped: the run was interrupted, so a missing poll may only be missing from the history"
	}

	run := func(name string, skip bool, f func() Result) {
		if skip {
			rep.Results = append(rep.Results, Result{Invariant: name, Outcome: Skipped, Message: skipWhy})
			return
		}
		rep.Results = append(rep.Results, timed(f))
	}
	run(InvSingleHolder, skipAll, func() Result { return checkSingleHolder(idx, opts) })
	run(InvStaleBelief, skipAll, func() Result { return checkStaleBelief(idx, opts) })
	run(InvSinglePoller, skipAll, func() Result { return checkSinglePoller(idx, opts) })
	run(InvStalePoll, skipAll, func() Result { return checkStalePoll(idx, opts) })
	run(InvValidity, skipAll, func() Result { return checkValidity(idx, opts) })
	run(InvLinearizable, skipAll, func() Result { return checkLinearizability(idx, opts) })
	var gaps []gapJudgement
	if !skipLive {
		gaps = idx.owed()
	}
	run(InvFailover, skipLive, func() Result {
		res, fo := checkFailover(idx, gaps, opts)
		rep.Failovers = fo
		return res
	})
	run(InvBalance, skipLive, func() Result { return checkBalance(idx, opts) })
	run(InvFencing, skipAll, func() Result { return checkFencing(idx, opts) })
	run(InvLiveness, skipLive, func() Result { return checkLiveness(idx, gaps, opts) })
	run(InvBlindWrite, skipLive, func() Result { return checkBlindWrites(idx, opts) })

	exercised(&rep, h.Meta.Exercises)
	if len(h.Events) > 0 && h.Meta.PollInterval > 0 {
		rep.Balance = balanceSamples(idx.index)
	}
	if !skipLive {
		judgeLag(idx, &rep)
		judgeUnscheduledLag(idx, &rep)
	}
	return rep
}

// exercisedPrefix begins the message of an invariant the scenario exists to exercise that had nothing to
// judge (judgeUnscheduledLag finds it by it).
const exercisedPrefix = "the scenario exists to exercise"

// exercised turns a Skipped result into Unknown for every invariant the scenario exists to exercise
// (Meta.Exercises): a crash-failover run with no measured takeover is no pass, it is a run that showed
// nothing.
func exercised(rep *Report, inv []string) {
	for i, r := range rep.Results {
		if r.Outcome == Skipped && slices.Contains(inv, r.Invariant) {
			rep.Results[i].Outcome = Unknown
			rep.Results[i].Message = fmt.Sprintf("%s %s, and this run gave it nothing to judge (%s)", exercisedPrefix, r.Invariant, r.Message)
		}
	}
}

// timed runs f and stamps the result with its duration.
func timed(f func() Result) Result {
	start := time.Now()
	r := f()
	r.Duration = time.Since(start)
	return r
}
