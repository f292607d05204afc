package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// The bound table: one bound per class of fault, derived from what the fault physically allows, and the
// same for every scenario (the random nemesis included). A bound is the longest an endpoint whose holder
// a fault hit may go before another live instance polls it. Each is the moment the fault's physical limit
// lets a correct system take over, plus FailoverTolerance; it is written in the terms of the run's own
// timing (history.Meta: LeaseTTL, PollInterval; history.Timing: RenewInterval, HeartbeatInterval,
// OpTimeout, PollDuration, DeadPeer), so a history is judged by the timing it ran with. Two figures recur:
//
//   - notice = RenewInterval + OpTimeout: the longest a system may take to learn something only a call can
//     show (that its backend is back, that its data is gone). It calls its backend at least once per
//     renewal interval while it holds anything, and a call may take its bound before it fails.
//   - blind = max(RenewInterval, HeartbeatInterval) + OpTimeout: how long a holder whose writes land but
//     whose replies are lost goes on writing before it can know. Its first call after the fault comes
//     within one interval of each periodic write it makes, and it learns that the reply is lost one call
//     bound later; everything it sent until then took effect.
//
// The table (docs/bounds.md derives each entry at spec timing):
//
//	class         faults                                       deadline
//	gone          crash, restart (new ID)                      start + TTL
//	silent        partition, stall, pause (from when it        start + DeadPeer (the TTL for a key that
//	              took hold), requests held ≥ TTL               expires)
//	blind         one-way partition, replies held past the     start + blind + TTL (+ the hold, for
//	              call bound, requests held < TTL (a hold       requests that land late)
//	              counts past it when a fresh connection's
//	              set-up and call, callTrips × the hold, do;
//	              so does a latency whose slowest trips do)
//	handoff       graceful stop (with or without a signal)     start + PollDuration
//	backend-down  outage of the whole fleet, redis-pause,      max(start + TTL, end + notice)
//	              restart from an append-only file
//	wipe          restart empty or from an older snapshot,     end (or the promotion) + notice + TTL
//	              a replica promoted, a slot moved
//	slow          latency and holds that even a fresh          adds what it delays: 3 × (latency +
//	              connection's call waits out, held requests   jitter), or the hold
//	              that match
//
// A fault's takeover is judged against its own deadline. Another fault that hinders the same takeover
// moves the deadline to the later of the two (see deadlineOf): a backend-wide fault always does, an
// instance fault does when it hits an instance that held the endpoint after the first fault began (the
// survivor that took it over, or the holder again), and a slow fault on such an instance adds its delay.

// ExpiryTick is Redis's expiry resolution: it keeps expiry times in milliseconds and removes a key that
// is read at the first access in or after its expiry millisecond, so a lease may outlive its TTL by up to
// a millisecond.
const ExpiryTick = time.Millisecond

// SchedulingAllowance is the lag the bounds allow at each hand-off between goroutines or processes on a
// loaded two-core machine. A runnable thread waits at most about one scheduler period for a core (Linux
// CFS: 6 ms × (1 + log2 CPUs), 12 ms on two cores); 25 ms is two periods. It does not scale with the time
// scale: CPU scheduling does not. Harness lag above it inside a timing violation's window means the run
// cannot tell the system's lateness from the machine's.
const SchedulingAllowance = 25 * time.Millisecond

// Handoffs is how many hand-offs lie between a lease running out and the takeover's poll being stamped:
// the survivor's timer firing, Redis answering its acquire, the reply read and the poll started, and the
// endpoint stamping the poll.
const Handoffs = 4

// FailoverTolerance is what every bound of the table allows beyond the physical limit of its fault:
// Redis's expiry tick and Handoffs hand-offs of SchedulingAllowance each. It contains no discovery, poll
// or renewal interval: a system that notices a dead holder only at its next periodic tick fails it.
const FailoverTolerance = ExpiryTick + Handoffs*SchedulingAllowance

// SpecFailoverBound is the failover bound the specification sets (FR-017, SC-002, and SC-006 for the
// missed-poll window around a scale change): the lease TTL, plus FailoverTolerance. It is the table's
// entry for a crash.
func SpecFailoverBound(ttl time.Duration) time.Duration { return ttl + FailoverTolerance }

// FaultClass groups faults by what they do to a holder's writes, which is what bounds a takeover.
type FaultClass string

// The fault classes of the bound table.
const (
	// ClassGone: the holder is gone; nothing of it lands after the fault.
	ClassGone FaultClass = "gone"
	// ClassSilent: the holder lives, but none of its writes land after the fault.
	ClassSilent FaultClass = "silent"
	// ClassBlind: the holder's writes land, but it cannot see their replies.
	ClassBlind FaultClass = "blind"
	// ClassHandoff: the holder stops gracefully: it finishes its poll in flight, then releases.
	ClassHandoff FaultClass = "handoff"
	// ClassBackendDown: the backend cannot be reached, or is frozen, but keeps its data.
	ClassBackendDown FaultClass = "backend-down"
	// ClassWipe: the backend lost data (or may have): every grant waits a TTL after a system learns it.
	ClassWipe FaultClass = "wipe"
	// ClassSlow: calls are slowed but answered; no takeover is due, one that is due takes longer.
	ClassSlow FaultClass = "slow"
	// ClassNone: nothing a takeover waits for (a start, a clock drift within the bound).
	ClassNone FaultClass = "none"
)

// Deadline is the table's verdict for one fault: by when an endpoint it took from its holder must be
// polled by another live instance, and why.
type Deadline struct {
	Class FaultClass
	// From is when the clock starts: the fault's start, when a pause took hold, or the end of a fault
	// that left no survivor (an outage of the whole fleet).
	From time.Duration
	// At is the deadline (run time), FailoverTolerance included. Zero for ClassSlow and ClassNone.
	At time.Duration
	// Delay is what a ClassSlow fault adds to a deadline it overlaps.
	Delay time.Duration
	// Why derives the deadline in words, with the figures.
	Why string
}

// timingOf returns the history's timing for the table, or false for a history recorded before it.
func timingOf(m history.Meta) (history.Timing, bool) {
	if m.Timing == nil || m.LeaseTTL <= 0 {
		return history.Timing{}, false
	}
	return *m.Timing, true
}

// notice is how long a system may take to learn what only a call can show (see the table).
func notice(t history.Timing) time.Duration { return t.RenewInterval + t.OpTimeout }

// blindWrites is how long a holder whose replies are lost goes on writing before it can know.
func blindWrites(t history.Timing) time.Duration {
	return max(t.RenewInterval, t.HeartbeatInterval) + t.OpTimeout
}

// deadPeer is how long the backend keeps a silent holder's holding.
func deadPeer(m history.Meta, t history.Timing) time.Duration {
	if t.DeadPeer > 0 {
		return t.DeadPeer
	}
	return m.LeaseTTL
}

// Classify returns the class of fault f in a run with meta m (its parameters decide for the held and
// slowed faults).
func Classify(f *history.Fault, m history.Meta) FaultClass {
	t, _ := timingOf(m)
	name := strings.ToLower(f.Name)
	switch {
	case name == "crash" || name == "restart" || name == "aborted-start" || name == "conn-reset":
		return ClassGone
	case name == "stop":
		return ClassHandoff
	case name == "partition" || name == "stall" || name == "pause" || name == "freeze":
		return ClassSilent
	case name == "one-way-partition":
		return ClassBlind
	case name == "outage" || name == "redis-pause" || name == "redis-restart-aof":
		return ClassBackendDown
	case f.Wipes || name == "redis-restart" || name == "redis-restart-from-snapshot" ||
		name == "primary-kill" || name == "sentinel-failover" || name == "primary-isolate" ||
		name == "shard-primary-kill" || name == "slot-migration" || name == "shard-node-restart":
		return ClassWipe
	case name == "latency":
		// A round trip costs latency ± jitter, half each way (chaos.Latency): slow while even a call
		// that opens a connection fits its slowest trips in the call bound; else calls may fail while
		// what they sent lands, as under held replies.
		slowest, fastest := roundTrips(f)
		switch {
		case slowest*callTrips(t) < t.OpTimeout:
			return ClassSlow
		case fastest/2 >= m.LeaseTTL:
			return ClassSilent
		}
		return ClassBlind
	case name == "slow-requests":
		d := paramDur(f, "delay")
		switch {
		case f.Params["match"] != "" || d*callTrips(t) < t.OpTimeout:
			return ClassSlow
		case d >= m.LeaseTTL:
			return ClassSilent
		}
		return ClassBlind
	case name == "slow-replies":
		if paramDur(f, "delay")*callTrips(t) < t.OpTimeout {
			return ClassSlow
		}
		return ClassBlind
	}
	if f.Removes {
		return ClassGone
	}
	return ClassNone
}

// callTrips is how many trips a hold of every request or every reply delays one call by, at most: a
// call that opens a fresh connection waits for the connection's set-up replies first, one after
// another (history.Timing.HandshakeReplies), then for its own. A hold of d fails such a call when
// callTrips × d reaches the call bound, although a call on an open connection gets its reply d late:
// the holder loses its calls as under a lost reply, and the fault is blind, not slow.
func callTrips(t history.Timing) time.Duration { return time.Duration(1 + max(t.HandshakeReplies, 0)) }

// OwesTakeover reports whether fault f, in a run with meta m, owes a takeover of what its targets
// held, judged against its own deadline: its class does (see the table), and it is not a hold or a
// latency under which calls on open connections may still be answered (answered), whose holder may
// keep its leases.
func OwesTakeover(f *history.Fault, m history.Meta) bool {
	c := Classify(f, m)
	return owesTakeover(c) && (c != ClassBlind || !answered(f, m))
}

// roundTrips returns the slowest and the fastest round trip a latency fault allows: latency + jitter
// and latency - jitter.
func roundTrips(f *history.Fault) (slowest, fastest time.Duration) {
	l, j := paramDur(f, "latency"), paramDur(f, "jitter")
	return l + j, max(l-j, 0)
}

// answered reports whether calls on an open connection may still be answered within their bound under
// fault f (a hold shorter than the bound; a latency whose fastest round trip is), even if its class is
// blind because a call on a fresh connection, or a slow trip of the jitter, is not. The holder may then
// keep its leases or lose them: it owes no takeover of its own.
func answered(f *history.Fault, m history.Meta) bool {
	t, _ := timingOf(m)
	switch strings.ToLower(f.Name) {
	case "latency":
		_, fastest := roundTrips(f)
		return fastest < t.OpTimeout
	case "slow-requests":
		return f.Params["match"] != "" || paramDur(f, "delay") < t.OpTimeout
	case "slow-replies":
		return paramDur(f, "delay") < t.OpTimeout
	}
	return false
}

// slowedBy is what a slowing fault (a latency, a hold) adds to a deadline it hinders, and why.
func slowedBy(f *history.Fault) (time.Duration, string) {
	if f.Name == "latency" {
		slowest, _ := roundTrips(f)
		d := 3 * slowest
		return d, fmt.Sprintf("%s: three one-way trips slowed (the last renewal, the survivor's acquire and its reply): %v", f.Name, d)
	}
	d := paramDur(f, "delay")
	return d, fmt.Sprintf("%s: what it holds arrives %v late", f.Name, d)
}

// paramDur reads a duration parameter ("1500ms", "2s"); zero when absent or unreadable.
func paramDur(f *history.Fault, key string) time.Duration {
	d, err := time.ParseDuration(f.Params[key])
	if err != nil {
		return 0
	}
	return d
}

// deadline returns the table's deadline for fault event fe in the history indexed by idx, or false when
// the history has no timing (an older one) or the fault is of a class that owes no takeover of its own.
func (idx *index) deadline(fe *history.Event) (Deadline, bool) {
	t, ok := timingOf(idx.meta)
	if !ok {
		return Deadline{}, false
	}
	f := fe.Fault
	ttl := idx.meta.LeaseTTL
	s, e := fe.At, idx.faultEnd(fe)
	tol := FailoverTolerance
	d := Deadline{Class: Classify(f, idx.meta), From: s}
	switch d.Class {
	case ClassGone:
		d.At = s + ttl + tol
		d.Why = fmt.Sprintf("%s: the holder is gone; its lease lasts at most the TTL (%v) from its last write, before the fault", f.Name, ttl)
	case ClassSilent:
		if at, ok := idx.pausedAt(toSet(f.Targets), s, e); ok {
			d.From = at
		}
		dp := deadPeer(idx.meta, t)
		d.At = d.From + dp + tol
		if dp == ttl {
			d.Why = fmt.Sprintf("%s: nothing the holder sends lands; its lease lasts at most the TTL (%v) from its last write", f.Name, ttl)
		} else {
			d.Why = fmt.Sprintf("%s: nothing the holder sends lands; the backend frees a silent holder's session within its dead-peer bound (%v)", f.Name, dp)
		}
	case ClassBlind:
		bw := blindWrites(t)
		late := time.Duration(0) // a renewal held or slowed less than a TTL lands late, and still extends
		switch f.Name {
		case "slow-requests":
			late = paramDur(f, "delay")
		case "latency":
			slowest, _ := roundTrips(f)
			late = slowest / 2
		}
		d.At = s + bw + late + max(ttl, deadPeer(idx.meta, t)) + tol
		d.Why = fmt.Sprintf("%s: the holder's writes land unseen until it can know (a renewal or heartbeat interval and a call bound: %v)", f.Name, bw)
		if late > 0 {
			d.Why += fmt.Sprintf(", held %v on the wire", late)
		}
		d.Why += fmt.Sprintf(", then its lease lasts the TTL (%v)", ttl)
	case ClassHandoff:
		d.At = s + t.PollDuration + tol
		d.Why = fmt.Sprintf("%s: a graceful stop finishes its poll in flight (at most %v), then releases", f.Name, t.PollDuration)
	case ClassBackendDown:
		d.At = max(s+ttl, e+notice(t)) + tol
		d.Why = fmt.Sprintf("%s: the backend keeps its data; a lease runs out at most a TTL (%v) after the fault began, and a system learns the backend is back within a renewal interval and a call bound (%v) of its end", f.Name, ttl, notice(t))
		if !f.Removes && coversFleet(idx.liveAt(s), toSet(f.Targets)) {
			d.From = e // no survivor: what is measured is the recovery
		}
	case ClassWipe:
		back := e
		if p, ok := idx.promotionAfter(s); ok && !f.Wipes {
			back = p
			// Every promotion may lose data, wherever it comes from: one that follows before the
			// deadline the last one set (the sentinels failing over again, from the replica they
			// promoted to another) is the backend returning again.
			for {
				q, ok := idx.promotionAfter(back + 1)
				if !ok || q >= back+notice(t)+ttl+tol {
					break
				}
				back = q
			}
		}
		d.At = back + notice(t) + ttl + tol
		d.Why = fmt.Sprintf("%s: the backend lost (or may have lost) data; holders from before may believe for a TTL (%v), so nothing is granted for a TTL after a system learns of it, within a renewal interval and a call bound (%v) of the backend's return", f.Name, ttl, notice(t))
	case ClassSlow:
		d.Delay, d.Why = slowedBy(f)
		return d, true
	default:
		return d, false
	}
	return d, true
}

// promotionAfter returns the first promotion note at or after t, if any (Sentinel and Cluster record
// "promotion: ..." when another node takes over).
func (idx *index) promotionAfter(t time.Duration) (time.Duration, bool) {
	for i := range idx.events {
		e := &idx.events[i]
		if e.Kind == history.KindNote && e.At >= t && strings.HasPrefix(e.Note, "promotion") {
			return e.At, true
		}
	}
	return 0, false
}

// backendWideClass reports whether fault fe acts on the whole backend (every instance's access to it),
// rather than on instances.
func (idx *index) backendWideClass(fe *history.Event, c FaultClass) bool {
	switch c {
	case ClassWipe, ClassBackendDown:
		return len(fe.Fault.Targets) == 0 || coversFleet(idx.liveAt(fe.At), toSet(fe.Fault.Targets))
	case ClassGone, ClassSilent, ClassBlind:
		return !fe.Fault.Removes && coversFleet(idx.liveAt(fe.At), toSet(fe.Fault.Targets))
	}
	return false
}
