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
// takes it at once.
func init() {
	const ms = time.Millisecond
	const pinned = -1 // a step whose time is part of a chain of causes must not move on its own
	all = append(all,
		sim.Scenario{
			// Both initial holders hand their share off to the joining instance (slot 2) at about 60.3 s;
			// their releases are held until about 115.3 s. Slot 2 can take nothing before the held-off
			// leases expire (80 s at the earliest), and it freezes at 62 s, holding nothing, so it wakes
			// believing nothing. Its heartbeat runs out while it is frozen (by about 90 s); the endpoints
			// return to slots 0 and 1, which acquire them again under new holdings once they see it gone
			// (by about 105 s). The late releases land at about 115.3 s: they must find holdings that are
			// not theirs. Slot 2 wakes at 116.3 s, still preferring the endpoints, and takes at once any
			// whose lease is gone, while the holder that re-acquired it believes until its next renewal
			// (so a renewal in the second between the landing and the wake hides one holder's share).
			Name: "release-after-reacquire", Description: "Two holders' handoff releases are held on the wire while their endpoints go to a joining instance that freezes and come back to them; the releases land on the new holdings, which they must not delete.",
			Instances: 2, Endpoints: 10, Duration: 170 * s,
			Steps: chaos.Schedule{
				{At: 59 * s, For: 5 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 0, Delay: 55 * s, Match: "release "}},
				{At: 59 * s, For: 5 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 1, Delay: 55 * s, Match: "release "}},
				{At: 60 * s, Jitter: pinned, Fault: chaos.Start{Count: 1}},
				{At: 62 * s, For: 54*s + 300*ms, Jitter: pinned, Fault: chaos.Pause{Slot: 2}},
			},
			Steady: w(150*s, 170*s), ExpectBalance: true,
		},
	)
}
