package checker

import (
	"fmt"
	"strings"

	"github.com/tenurelabs/tenure/history"
)

// checkAssumptions verifies that the history can be judged at all: it has events and a usable Meta
// header, its events are in (At, Seq) order with unique Seqs, it recorded polls (and, for leases,
// backend operations), and the backend was empty at the start (see dirtyStart). An interrupted run is
// Unknown: its history is partial. Every other failure is Violated, and the later invariants are skipped.
func checkAssumptions(idx *model) Result {
	res := Result{Invariant: InvAssumptions}
	var problems []string
	m := idx.meta
	if len(idx.events) == 0 {
		problems = append(problems, "the history has no events")
	}
	if m.Kind != "lease" && m.Kind != "election" {
		problems = append(problems, fmt.Sprintf("meta kind is %q, want \"lease\" or \"election\" (is the header missing?)", m.Kind))
	}
	if m.LeaseTTL <= 0 || m.PollInterval <= 0 || m.FailoverBound <= 0 {
		problems = append(problems, fmt.Sprintf("meta bounds must be positive: lease_ttl=%v poll_interval=%v failover_bound=%v",
			m.LeaseTTL, m.PollInterval, m.FailoverBound))
	}
	for i := range idx.events {
		if e := &idx.events[i]; e.At < 0 || e.At == history.Infinity {
			problems = append(problems, fmt.Sprintf("event seq %d has an invalid start time %d", e.Seq, e.At))
			break
		}
	}
	for i := 1; i < len(idx.events); i++ {
		a, b := &idx.events[i-1], &idx.events[i]
		if b.At < a.At || (b.At == a.At && b.Seq <= a.Seq) {
			problems = append(problems, fmt.Sprintf("events are not in time order: seq %d at %v follows seq %d at %v",
				b.Seq, b.At, a.Seq, a.At))
			break
		}
	}
	if len(idx.events) > 0 && idx.pollCount == 0 {
		problems = append(problems, "no polls were recorded (is the system under test polling through the harness?)")
	}
	if len(idx.events) > 0 && m.Kind == "lease" && len(idx.ops) == 0 {
		problems = append(problems, "no backend operations were recorded (does the system use the client the harness hands it?)")
	}
	if p := dirtyStart(idx.index); p != "" {
		problems = append(problems, p)
	}
	for _, w := range m.Steady {
		if w.To < w.From {
			problems = append(problems, fmt.Sprintf("steady window [%v, %v] ends before it starts", w.From, w.To))
			break
		}
	}
	var failedFaults []string
	for _, e := range idx.faults {
		if e.Fault.Err != "" {
			failedFaults = append(failedFaults, fmt.Sprintf("%s %s: %s", e.Fault.ID, e.Fault.Name, e.Fault.Err))
		}
	}
	switch {
	case len(problems) > 0:
		res.Outcome = Violated
		res.Message = "the history cannot be judged: " + strings.Join(problems, "; ")
	case len(failedFaults) > 0:
		res.Outcome = Unknown
		res.Message = unscheduledPrefix + ", so a pass would mean nothing: " + strings.Join(failedFaults, "; ")
	case m.Interrupted:
		res.Outcome = Unknown
		res.Message = fmt.Sprintf("the run was interrupted at %v: the history is partial, so only safety can be judged; re-run it to completion", idx.end)
	case len(idx.scope.breaches()) > 0:
		res.Outcome = Unknown
		res.Message = "the run went beyond the system's stated assumptions without declaring it, so a pass would mean nothing: " +
			strings.Join(idx.scope.breaches(), "; ") + "; findings it explains are judged as outside the assumptions"
	default:
		res.Outcome = Pass
		res.Message = fmt.Sprintf("%d events (%s, %s) over %v, in order", len(idx.events), count(len(idx.ops), "operation", "operations"), count(idx.pollCount, "poll", "polls"), round(idx.end))
	}
	if res.Outcome != Violated {
		res.Message += assumptionsNote(idx)
	}
	return res
}

// assumptionsNote states the assumptions the run was judged against, and the faults it declared outside
// them, so a verdict never hides that part of the run lay outside them.
func assumptionsNote(idx *model) string {
	a := idx.meta.Assumptions
	if !idx.scope.recorded {
		return "; the history records no assumptions (an older history): belief overlaps are judged as inside them, stale polls fencing refused as safe, and clock drift against no bound"
	}
	note := fmt.Sprintf("; assumptions: drift bound %g", a.DriftBound)
	if a.Persistence != "" {
		note += ", persistence " + a.Persistence
	}
	if a.Topology != "" {
		note += ", topology " + a.Topology
	}
	if d := idx.scope.declared(); len(d) > 0 {
		note += "; outside them by declaration: " + strings.Join(d, ", ")
	}
	return note
}

// dirtyStart returns a description of the first lease key that visibly existed before the run touched it,
// or "". A key is judged only by its first modelled operation, and only when that operation completed,
// without error, before any other operation on the key began: a read that found an owner, or an acquire
// refused, or a renew or release that succeeded, shows the key was already there.
func dirtyStart(idx *index) string {
	first := map[string][]*history.Event{} // per key, up to its first two modelled operations
	var keys []string
	for _, e := range idx.ops {
		switch e.Op.Kind {
		case history.OpAcquire, history.OpRenew, history.OpRelease, history.OpRead:
		default:
			continue
		}
		k := e.Op.Key
		if _, ok := first[k]; !ok {
			keys = append(keys, k)
		}
		if len(first[k]) < 2 {
			first[k] = append(first[k], e)
		}
	}
	for _, k := range keys {
		ops := first[k]
		e := ops[0]
		if e.Op.Unknown || e.End == history.Infinity || (e.Op.Err != "" && !isNilReply(e.Op.Err)) {
			continue
		}
		if len(ops) > 1 && ops[1].At <= e.End {
			continue
		}
		var found bool
		switch e.Op.Kind {
		case history.OpRead:
			found = e.Op.Value != ""
		case history.OpAcquire:
			found = !e.Op.OK
		default:
			found = e.Op.OK
		}
		if found {
			return fmt.Sprintf("key %s already existed when the run first touched it (seq %d: %s): the backend was not empty at the start",
				k, e.Seq, e.Op.Kind)
		}
	}
	return ""
}

// unscheduledPrefix begins the assumptions message of a run whose faults could not all be applied.
const unscheduledPrefix = "the run did not go as scheduled"
