package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Outcome is a check's verdict. Unknown is a verdict of its own (a checker timeout, a history too
// incomplete to judge): it never counts as a pass.
type Outcome string

// Outcomes.
const (
	Pass     Outcome = "pass"
	Violated Outcome = "violated"
	Unknown  Outcome = "unknown"
	Skipped  Outcome = "skipped" // not applicable to this scenario, or an assumption it rests on failed
	// Caught means the invariant's premise was broken, but only by faults outside the system's stated
	// assumptions, and nothing of it reached the resource: a stale holder's polls were refused by fencing
	// or it made none. It is safe, lets the run pass, and is never shown as a violation; Result.Caught
	// lists what was caught.
	Caught Outcome = "caught"
	// Inconclusive means a timing invariant (failover, balance, liveness) was broken only while the
	// harness itself ran late (see LagThreshold): the run cannot tell the system's lateness from the
	// harness's, so it is evidence neither way. It never counts as a pass, nor as a violation;
	// Result.Inconclusive lists the findings with the lag measured. Safety invariants are never
	// inconclusive.
	Inconclusive Outcome = "inconclusive"
)

// Invariant names, as they appear in results, reports and --expect lists.
const (
	InvAssumptions  = "assumptions"
	InvSingleHolder = "single-holder" // beliefs: no two instances believe they hold one endpoint at once
	InvStaleBelief  = "stale-belief"  // no belief outlives its holder's value in the key past the detection bound
	InvSinglePoller = "single-poller" // the resource: no two holders' polls reached it at once
	InvStalePoll    = "stale-poll"    // the resource: no stale poll arrived, even one fencing refused
	InvValidity     = "validity"      // every poll lies inside the poller's own confirmed lease
	InvLinearizable = "linearizability"
	InvFailover     = "failover"
	InvBalance      = "balance"
	InvFencing      = "fencing"
	InvLiveness     = "liveness"
	InvBlindWrite   = "blind-write" // no acquire or renewal sent after an unanswered call showed the link dead
)

// Result is the verdict of one invariant over one history.
type Result struct {
	// Invariant is one of the Inv* names.
	Invariant string `json:"invariant"`
	// Outcome is the verdict.
	Outcome Outcome `json:"outcome"`
	// Message explains the verdict in one or two sentences a person can act on.
	Message string `json:"message"`
	// Violations lists each individual violation (capped; see Truncated).
	Violations []Violation `json:"violations,omitempty"`
	// Truncated counts violations beyond those listed.
	Truncated int `json:"truncated,omitempty"`
	// Caught lists the findings that are safe: caused by faults outside the system's stated assumptions
	// and stopped before the resource (capped; see CaughtTruncated). They never count as violations.
	Caught []Violation `json:"caught,omitempty"`
	// CaughtTruncated counts caught findings beyond those listed.
	CaughtTruncated int `json:"caught_truncated,omitempty"`
	// Inconclusive lists the timing findings that coincided with harness lag above LagThreshold, each
	// with its Lag; they are not among Violations. (A violation beyond the checker's list, counted in
	// Truncated, has no window to weigh and stays a violation.)
	Inconclusive []Violation `json:"inconclusive,omitempty"`
	// Duration is how long the check took.
	Duration time.Duration `json:"duration"`
}

// Violation is one instance of an invariant failing, located in time and tied to the events involved.
type Violation struct {
	// At is the run time at which the violation happened (e.g. the start of the second, overlapping poll).
	At time.Duration `json:"at"`
	// Endpoint is the endpoint concerned, if any.
	Endpoint string `json:"endpoint,omitempty"`
	// Instances are the instances involved.
	Instances []string `json:"instances,omitempty"`
	// Message describes this violation.
	Message string `json:"message"`
	// Events are the Seq numbers of the history events that show it.
	Events []int64 `json:"events,omitempty"`
	// ReachedResource is set when the offending poll (for single-holder: a poll by the stale holder
	// during the overlap) reached the resource; false means it was refused by fencing or never made.
	ReachedResource bool `json:"reached_resource,omitempty"`
	// Outside names the faults outside the system's stated assumptions that this finding is attributed
	// to ("f3 pause"); empty when it happened inside them.
	Outside []string `json:"outside,omitempty"`
	// From and To are the run time a timing violation depends on (from the moment its obligation
	// began — the end of the holding a takeover follows, the poll a cadence runs from, a grant — to the
	// poll that ended the gap, or the end of an unbalanced stretch): harness lag inside it may have
	// caused it. Both zero: not a timing violation, or one with no window.
	From time.Duration `json:"from,omitempty"`
	To   time.Duration `json:"to,omitempty"`
	// Over is how far a timing violation exceeded its bound: the takeover or gap beyond it, the time
	// spent unbalanced.
	Over time.Duration `json:"over,omitempty"`
	// Lag, on an inconclusive finding, is the harness lag it coincided with.
	Lag *LagFinding `json:"lag,omitempty"`
}

// Failover is one measured takeover after a fault.
type Failover struct {
	// FaultID is the fault's ID in the history.
	FaultID string `json:"fault_id"`
	// Fault is the fault's name.
	Fault string `json:"fault"`
	// Endpoint is the affected endpoint.
	Endpoint string `json:"endpoint"`
	// From is the instance that held it; To the one that polled it next (empty if none did).
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// FaultAt is when the fault began; PolledAt when the endpoint was next polled by a live instance.
	FaultAt  time.Duration `json:"fault_at"`
	PolledAt time.Duration `json:"polled_at,omitempty"`
	// MeasuredFrom is when the clock started: FaultAt, or the fault's end for a fault that isolated
	// every live instance (no survivor could take over before it ended).
	MeasuredFrom time.Duration `json:"measured_from"`
	// Latency is PolledAt-MeasuredFrom; negative when the endpoint was never polled again.
	Latency time.Duration `json:"latency"`
	// Bound is the acceptable latency.
	Bound time.Duration `json:"bound"`
	// Class is the bound table's class of the fault (see Classify); Why derives the bound, other
	// faults that lengthened it included. Empty for histories without timing (judged by Meta's bound).
	Class string `json:"class,omitempty"`
	Why   string `json:"why,omitempty"`
}

// BalanceSample is the number of endpoints each instance held at one moment.
type BalanceSample struct {
	At      time.Duration  `json:"at"`
	PerInst map[string]int `json:"per_instance"`
	// Ideal is endpoints / live instances.
	Ideal float64 `json:"ideal"`
}

// Report is the checker's full output for one history.
type Report struct {
	// Results holds one entry per invariant, in the order checked.
	Results []Result `json:"results"`
	// Failovers lists every measured takeover.
	Failovers []Failover `json:"failovers,omitempty"`
	// Balance samples ownership over time (from polls and beliefs).
	Balance []BalanceSample `json:"balance,omitempty"`
	// Ops counts backend operations; Polls counts polls; Refused counts polls refused by fencing (whether
	// the stale-poll invariant judged them caught or violations).
	Ops     int `json:"ops"`
	Polls   int `json:"polls"`
	Refused int `json:"refused"`
}

// Breaches returns the violations that count against the invariant. Results of this version list only
// those; a single-poller result read from an older result.json also listed refused polls
// (ReachedResource false) among its violations, and those are left out.
func (r Result) Breaches() []Violation {
	if r.Invariant != InvSinglePoller {
		return r.Violations
	}
	var out []Violation
	for _, v := range r.Violations {
		if v.ReachedResource {
			out = append(out, v)
		}
	}
	return out
}

// CaughtCount is the number of caught findings, listed and truncated.
func (r Result) CaughtCount() int { return len(r.Caught) + r.CaughtTruncated }

// OK reports whether every result passed, was caught or was skipped.
func (r Report) OK() bool {
	for _, res := range r.Results {
		if res.Outcome == Violated || res.Outcome == Unknown || res.Outcome == Inconclusive {
			return false
		}
	}
	return true
}

// Inconclusive reports whether the run is inconclusive: no result violated or unknown, and at least one
// inconclusive. A run with any violation fails, whatever else was inconclusive.
func (r Report) Inconclusive() bool {
	found := false
	for _, res := range r.Results {
		switch res.Outcome {
		case Violated, Unknown:
			return false
		case Inconclusive:
			found = true
		}
	}
	return found
}

// collector gathers violations and caps them when the result is built.
type collector struct {
	list []Violation
}

func (c *collector) add(v Violation) { c.list = append(c.list, v) }

// capped returns the violations in time order, at most max of them, and how many were left out.
func (c *collector) capped(max int) ([]Violation, int) {
	slices.SortStableFunc(c.list, func(a, b Violation) int {
		if a.At != b.At {
			return cmp.Compare(a.At, b.At)
		}
		return cmp.Compare(a.Endpoint, b.Endpoint)
	})
	if len(c.list) <= max {
		return c.list, 0
	}
	return c.list[:max], len(c.list) - max
}

// result builds a Result from the collected violations: Pass with passMsg when there are none, otherwise
// Violated with failMsg.
func (c *collector) result(inv string, max int, passMsg, failMsg string) Result {
	if len(c.list) == 0 {
		return Result{Invariant: inv, Outcome: Pass, Message: passMsg}
	}
	v, extra := c.capped(max)
	return Result{Invariant: inv, Outcome: Violated, Message: failMsg, Violations: v, Truncated: extra}
}

// verdict builds a Result from violations and caught findings: Violated with failMsg when there is a
// violation, Caught with caughtMsg when every finding was caught, Pass with passMsg when there is none.
// Both lists are capped at max.
func verdict(inv string, max int, bad, caught *collector, passMsg, caughtMsg, failMsg string) Result {
	res := Result{Invariant: inv, Outcome: Pass, Message: passMsg}
	switch {
	case len(bad.list) > 0:
		res.Outcome, res.Message = Violated, failMsg
	case len(caught.list) > 0:
		res.Outcome, res.Message = Caught, caughtMsg
	}
	res.Violations, res.Truncated = bad.capped(max)
	res.Caught, res.CaughtTruncated = caught.capped(max)
	return res
}

// Options tunes the checker. Zero or negative fields take their defaults.
type Options struct {
	// LinearizabilityTimeout bounds the whole linearizability search; when it runs out the verdict is
	// Unknown. Default 30 s.
	LinearizabilityTimeout time.Duration
	// MaxViolations caps the violations listed per invariant; the rest are counted in
	// Result.Truncated. Default 50.
	MaxViolations int
	_             struct{}
}

// DefaultOptions returns the default options.
func DefaultOptions() Options {
	return Options{LinearizabilityTimeout: 30 * time.Second, MaxViolations: 50}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.LinearizabilityTimeout <= 0 {
		o.LinearizabilityTimeout = d.LinearizabilityTimeout
	}
	if o.MaxViolations <= 0 {
		o.MaxViolations = d.MaxViolations
	}
	return o
}

// LagFinding is the harness lag a timing finding coincided with: the worst value of any signal within
// the finding's window, before its deadline.
type LagFinding struct {
	// Max is the lag, At the start of the window it was measured in, Source which signal measured it.
	Max    time.Duration `json:"max"`
	At     time.Duration `json:"at"`
	Source string        `json:"source"`
	// Covered is how long the harness was measured late inside the finding's stretch, window by
	// window: the most the lag can have delayed it.
	Covered time.Duration `json:"covered,omitempty"`
}

func (f LagFinding) String() string {
	if f.Covered > 0 {
		return fmt.Sprintf("harness lag %v (%s, at %v; %v late in all, in the stretch)", f.Max.Round(time.Millisecond), f.Source, f.At, f.Covered.Round(time.Millisecond))
	}
	return fmt.Sprintf("harness lag %v (%s, at %v)", f.Max.Round(time.Millisecond), f.Source, f.At)
}
