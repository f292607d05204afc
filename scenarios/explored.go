package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Situations the composing nemesis (explore) draws at random, written out so that the mechanisms they
// exercise are caught on every seed.
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
		// Redis saves a snapshot at 40 s and is killed at 70 s, then loads it: every lease and
		// heartbeat key of the snapshot has expired by then (renewed at most 10 s before 40 s), the
		// epoch key has not. The holder of ep-0 stalls at 68 s, after a renewal at 58-68 s, so it
		// believes until 86.7-96.7 s. The others find the dataset from another server run, and the
		// guard keeps every endpoint from them for a TTL from their first attempt (about 100 s); a
		// guard that took the restored epoch as this run's, or that lasted half a TTL, grants the
		// holder's endpoints inside its belief. Fencing is off: only the lease system keeps two
		// pollers apart.
		sim.Scenario{
			Name: "redis-snapshot-holder-stalled",
			Description: "Redis restarts from a 30 s old snapshot while the holder of ep-0 is stalled: the restored epoch key names another server run, " +
				"and nobody may be granted the stalled holder's endpoints while it may still believe.",
			Instances: 3, Endpoints: 9, Duration: 170 * s,
			Steps: chaos.Schedule{
				{At: 40 * s, For: 30 * s, Jitter: pinned, Fault: chaos.RedisRestartFromSnapshot{}},
				{At: 68 * s, For: 30 * s, Jitter: pinned, Fault: chaos.Stall{Of: "ep-0"}},
			},
			Steady: w(150*s, 170*s), ExpectBalance: true, NeedsBackendControl: true,
		},
		// Polls last 4 s, every 5 s; the holder of ep-0 stalls for 1.5 TTL, so its local deadline is the
		// only end of its beliefs. A poll in flight then must end at the deadline (one safety margin
		// inside the validity bound): one that runs to its end polls past the lease. With polls as long
		// as the safety margin (the spec's 1 s) a late end would be hidden.
		sim.Scenario{
			Name:        "stall-long-polls",
			Description: "Polls last 4 s; a holder's Redis calls hang for 1.5 TTL: the poll in flight at its local deadline must be cut short there, not run to its end.",
			Instances:   3, Endpoints: 9, Duration: 150 * s,
			Timing: sim.Timing{PollDuration: 4 * s},
			Steps:  chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.Stall{Of: "ep-0"}}},
			// No balance judged: handoffs wait for polls of 4 s, and the fleet may still be
			// settling when the window opens; balance is not what the scenario exercises.
			Steady: w(135*s, 150*s),
		},
	)
}
