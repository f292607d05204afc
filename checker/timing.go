package checker

import (
	"time"

	"github.com/tenurelabs/tenure/history"
)

// The run's timing as the model reads it, and the few constants that do not come from the run: the
// expiry tick of Redis and the scheduling allowance of a loaded machine.

// ExpiryTick is Redis's expiry resolution: it keeps expiry times in milliseconds and removes a key that
// is read at the first access in or after its expiry millisecond, so a lease may outlive its TTL by up to
// a millisecond.
const ExpiryTick = time.Millisecond

// SchedulingAllowance is the lag allowed at each hand-off between goroutines or processes on a loaded
// two-core machine. A runnable thread waits at most about one scheduler period for a core (Linux CFS:
// 6 ms × (1 + log2 CPUs), 12 ms on two cores); 25 ms is two periods. It does not scale with the time
// scale: CPU scheduling does not.
const SchedulingAllowance = 25 * time.Millisecond

// Handoffs is how many hand-offs lie between the moment an endpoint is owed a poll and the poll being
// stamped: the taker's timer firing (or its notification arriving), Redis answering its acquire, the
// reply read and the poll started, and the endpoint stamping the poll.
const Handoffs = 4

// FailoverTolerance is what every deadline allows beyond the moment the model owes the poll: Redis's
// expiry tick and Handoffs hand-offs of SchedulingAllowance each (101 ms). It contains no discovery,
// poll or renewal interval.
const FailoverTolerance = ExpiryTick + Handoffs*SchedulingAllowance

// SpecFailoverBound is the failover bound the specification sets (FR-017, SC-002): the lease TTL plus
// FailoverTolerance. It is what the model derives for a crash of a holder that wrote until it crashed
// (its key and its heartbeat last a TTL from its last write), the gate the reference is held to.
func SpecFailoverBound(ttl time.Duration) time.Duration { return ttl + FailoverTolerance }

// figures is a history's timing, at the run's time scale.
type figures struct {
	ttl          time.Duration
	pollInterval time.Duration
	pollDuration time.Duration
	renew        time.Duration
	heartbeat    time.Duration
	heartbeatTTL time.Duration // the lease TTL when the history does not record it
	discovery    time.Duration
	opTimeout    time.Duration
	deadPeer     time.Duration // the lease TTL unless the system declares a session-based bound
	drift        float64
	handshake    int
	// timed is false for a history recorded before Meta.Timing: the model then has no call bound or
	// intervals to derive deadlines from, and judges no timing.
	timed bool
}

func figuresOf(m history.Meta) figures {
	f := figures{ttl: m.LeaseTTL, pollInterval: m.PollInterval, discovery: m.DiscoveryInterval,
		drift: m.Assumptions.DriftBound, deadPeer: m.LeaseTTL}
	if t := m.Timing; t != nil && m.LeaseTTL > 0 {
		f.timed = true
		f.pollDuration, f.renew, f.heartbeat, f.opTimeout = t.PollDuration, t.RenewInterval, t.HeartbeatInterval, t.OpTimeout
		f.heartbeatTTL, f.handshake = t.HeartbeatTTL, t.HandshakeReplies
		if t.DeadPeer > 0 {
			f.deadPeer = t.DeadPeer
		}
	}
	if f.heartbeatTTL <= 0 {
		f.heartbeatTTL = f.ttl
	}
	return f
}

// detect is the system's detection latency: how long it may take to learn something only a call can
// show (that its link or its backend is back, that a session appeared, that data was lost) and to act on
// it. It looks at least once per renewal, heartbeat and discovery interval, whichever is longest, and a
// call may take its bound before it answers or fails.
func (f figures) detect() time.Duration {
	return max(f.renew, f.heartbeat, f.discovery) + f.opTimeout
}

// cadence is how long after a poll's start a holder that keeps the cadence it was given starts its next
// one: a poll's duration, a poll interval, and FailoverTolerance.
func (f figures) cadence() time.Duration { return f.pollInterval + f.pollDuration + FailoverTolerance }

// staleBelief is how long a belief may outlive every value of its holder in the key: the holder finds
// out at its next renewal, which comes within a renewal interval, and a call bound later at most.
func (f figures) staleBelief() time.Duration { return f.renew + f.opTimeout + FailoverTolerance }

// callTrips is how many replies a call that has to open a connection waits for, one after another: the
// connection's set-up (history.Timing.HandshakeReplies) and its own.
func (f figures) callTrips() time.Duration { return time.Duration(1 + max(f.handshake, 0)) }
