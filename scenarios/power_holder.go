package scenarios

import (
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Scenarios of a write that lands after the lease changed hands and came back: a release held on the
// wire past the TTL reaches Redis after its sender re-acquired the same endpoint under a new holding.
// Only a release that deletes nothing but the holding it was sent for leaves the new one alone; a
// release that checks nothing, or checks a value that names the process rather than the holding,
// deletes the lease under a holder that still believes, and the next instance that prefers the endpoint
// takes it at once. And of a write that lands twice: an acquire whose reply is lost to a connection
// reset after it took effect, sent again by go-redis within the same call, must find its own write.
func init() {
	const ms = time.Millisecond
	const pinned = -1 // a step whose time is part of a chain of causes must not move on its own
	all = append(all,
		sim.Scenario{
			// Both initial holders hand their share off to the joining instance (slot 2) at about 60.3 s;
			// their releases are held until about 115.3 s. The release calls time out, and once the hold
			// ends (64 s) the holders release those values again, announced, as stale values of endpoints
			// assigned elsewhere: slot 2 may take some of its share before its pause takes hold (at its
			// first poll, from 62 s), and then wakes with a stale belief and polls once, which no lease
			// design can stop (a pause lies outside every lease system's assumptions): fencing refuses
			// that poll. Its heartbeat runs out while it is frozen; the endpoints return to slots 0 and 1,
			// which acquire them again under new holdings once they see it gone. The late releases land
			// at about 115.3 s: they must find holdings that are not theirs. Slot 2 wakes at 116.3 s,
			// still preferring the endpoints, and takes at once any whose lease is gone, while the holder
			// that re-acquired it believes until its next renewal (so a renewal in the second between the
			// landing and the wake hides one holder's share).
			Name: "release-after-reacquire", Description: "Two holders' handoff releases are held on the wire while their endpoints go to a joining instance that freezes and come back to them; the releases land on the new holdings, which they must not delete.",
			Instances: 2, Endpoints: 10, Duration: 170 * s,
			Steps: chaos.Schedule{
				{At: 59 * s, For: 5 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 0, Delay: 55 * s, Match: "release "}},
				{At: 59 * s, For: 5 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 1, Delay: 55 * s, Match: "release "}},
				{At: 60 * s, Jitter: pinned, Fault: chaos.Start{Count: 1}},
				{At: 62 * s, For: 54*s + 300*ms, Jitter: pinned, Fault: chaos.Pause{Slot: 2}},
			},
			Steady: w(150*s, 170*s), ExpectBalance: true, Fencing: true,
		},
		sim.Scenario{
			// Slot 3 joins at 60 s. The handoff releases of slots 0-2 are held on the wire for 2 s (their
			// calls still complete in time), so the announcements reach slot 3 at about 62.2 s, when
			// every reply to slot 3 comes 1 s late (61 s to 63.5 s): it acquires its share at about
			// 63.2 s, the acquires land at once and their replies are held until about 64.2 s. At 63.7 s
			// slot 3's link is reset: the held replies are gone, and go-redis sends each acquire again on
			// a new connection, where it finds the value its first attempt wrote. A re-sent acquire must
			// answer as the first would have (the same token); one that reports the lease as another's
			// leaves the endpoint unpolled until the lease expires, and answers what no single acquire
			// could have.
			Name: "acquire-resent", Description: "A joining instance's acquires land but their replies are lost to a connection reset; go-redis sends them again, and they must find their own writes and succeed.",
			Instances: 3, Endpoints: 12, Duration: 120 * s,
			Steps: chaos.Schedule{
				{At: 59*s + 500*ms, For: 2*s + 500*ms, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 0, Delay: 2 * s, Match: "release "}},
				{At: 59*s + 500*ms, For: 2*s + 500*ms, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 1, Delay: 2 * s, Match: "release "}},
				{At: 59*s + 500*ms, For: 2*s + 500*ms, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 2, Delay: 2 * s, Match: "release "}},
				{At: 60 * s, Jitter: pinned, Fault: chaos.Start{Count: 1}},
				{At: 61 * s, For: 2*s + 500*ms, Jitter: pinned, Fault: chaos.SlowReplies{Slot: 3, Delay: s}},
				{At: 63*s + 700*ms, Jitter: pinned, Fault: chaos.ConnReset{Slot: 3}},
			},
			Steady: w(100*s, 120*s), ExpectBalance: true,
		},
	)
}
