package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Writes that land after their callers gave up on them, written out from what the composing nemesis
// (explore) draws at random, so that the mechanisms they exercise are caught on every seed.
func init() {
	const pinned = -1 // the window must cover the expiry the crash sets
	all = append(all,
		// The leader crashes at 60 s, a renewal interval or less after its last renewal, so its key
		// expires between 80 and 90 s. From 65 s for 30 s the standbys' requests are held 25 s on the
		// wire, past the 3 s call bound and less than a TTL: the first acquire each sends then (within a
		// retry interval of 65 s; after it, only probes, which fail) lands between 90 and 100 s, after
		// the expiry, and the first to land is granted to a candidate that gave up on it. It learns so
		// at its next attempt once its requests pass (a refusal, then Leader naming it) and must release
		// that term at once; left to expire, the key keeps the role leaderless a TTL after it landed.
		sim.Scenario{
			Name: "election-late-acquire-redis",
			Description: "The leader crashes and the standbys' acquires at its key's expiry are held on the wire past their call bound: " +
				"the first lands after its sender gave up, naming a candidate that does not lead. That candidate must release the term when it next finds it, not leave the role a TTL without a leader.",
			System:    "election-redis",
			Instances: 3, Endpoints: 1, Duration: 170 * s,
			Steps: chaos.Schedule{
				{At: 60 * s, Jitter: pinned, Fault: chaos.Crash{Of: "ep-0"}},
				{At: 65 * s, For: 30 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 0, Delay: 25 * s}},
				{At: 65 * s, For: 30 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 1, Delay: 25 * s}},
			},
			Steady: w(150*s, 170*s),
		},
	)
}
