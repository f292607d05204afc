// Package mutation names the safety mechanisms of Tenure's reference lease manager and leader election
// that the checker-power tests remove one at a time. A mutant is the reference with exactly one
// mechanism switched off; each must be caught by a scenario, or the mechanism is untested.
//
// The set travels in the reference's Config as a value of an internal type, so code outside this module
// can neither name nor build a non-empty Set: production users always run the unmodified reference.
package mutation

import (
	"slices"
	"strings"
)

// Name identifies one removed mechanism.
type Name string

// Lease mutants.
const (
	NoDeadline           Name = "no-deadline"            // polls go on until a renewal fails or the holding ends otherwise
	RenewGetThenExpire   Name = "renew-get-then-expire"  // renewal as GET, compare in the client, then PEXPIRE
	RenewUnconditional   Name = "renew-unconditional"    // renewal as a plain PEXPIRE, no holder check
	ReleaseUnchecked     Name = "release-unchecked"      // release as a plain DEL, no holder check
	NoGuard              Name = "no-guard"               // no fresh-dataset guard: grants at once on an empty or restored dataset
	NotFailClosed        Name = "not-fail-closed"        // a renewal error keeps the belief (until the local deadline)
	TokenReset           Name = "token-reset"            // fencing tokens restart from 1 when the counter is gone
	DriftIgnored         Name = "drift-ignored"          // validity = TTL - margin, ignoring the drift bound
	DeadlineFromReply    Name = "deadline-from-reply"    // validity counted from the reply instead of the request
	NoLinkHealth         Name = "no-link-health"         // blind writes go on while no replies come back
	ReleaseBeforePoll    Name = "release-before-poll"    // a handoff releases without waiting for the in-flight poll
	ProcessIdentity      Name = "process-identity"       // the lease value names the process, not the holding
	PlainRendezvous      Name = "plain-rendezvous"       // HRW without the load cap
	AcquireNotIdempotent Name = "acquire-not-idempotent" // an acquire that finds its own value reports "held by another"
	TimeoutAsSuccess     Name = "timeout-as-success"     // a renewal that timed out counts as confirmed

	// Lifecycle mutants: the manager's Start and Stop as they were before their transitions were guarded.
	StopAfterCancelAbandons  Name = "stop-after-cancel-abandons"  // Stop after Start's context ended releases nothing
	StopHeartbeatRewrite     Name = "stop-heartbeat-rewrite"      // the heartbeat loop may write after Stop deleted the heartbeat
	StopDuringStartUnguarded Name = "stop-during-start-unguarded" // Stop during Start takes the running path (and panics)

	// Election mutants.
	ElectionTermUnchecked Name = "election-term-unchecked" // renew compares the instance, not the term
	ElectionNoCancel      Name = "election-no-cancel"      // the leader context is not cancelled at the deadline

	// ElectionStopAfterCancelAbandons: Stop after Start's context ended releases nothing.
	ElectionStopAfterCancelAbandons Name = "election-stop-after-cancel-abandons"
)

// Set is a set of removed mechanisms. The zero Set removes nothing.
type Set struct{ names []Name }

// Of returns the set of the given names.
func Of(names ...Name) Set {
	s := Set{names: slices.Clone(names)}
	slices.Sort(s.names)
	s.names = slices.Compact(s.names)
	return s
}

// Has reports whether n is removed.
func (s Set) Has(n Name) bool { return slices.Contains(s.names, n) }

// Empty reports whether nothing is removed.
func (s Set) Empty() bool { return len(s.names) == 0 }

// String lists the names, comma-separated.
func (s Set) String() string {
	parts := make([]string, len(s.names))
	for i, n := range s.names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}
