package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Scenarios of a Redis that keeps its data on disk and restarts from it, and of an empty restart with
// churn around it. A restart from a snapshot older than the leases brings back every key without a TTL
// (fencing counters, epochs) but none of the leases: the fresh-dataset guard must still hold grants back
// for a TTL while the old holders may believe.
func init() {
	all = append(all,
		sim.Scenario{
			Name: "redis-restart-from-snapshot", Description: "Redis snapshots (SAVE), runs on for 1.5 TTL, is killed and restarts from that snapshot: the leases are gone but older keys come back; nobody may take an endpoint while its holder may still believe.",
			Instances: 3, Endpoints: 9, Duration: 180 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.RedisRestartFromSnapshot{}}},
			Steady: w(160*s, 180*s), ExpectBalance: true, Fencing: true, NeedsBackendControl: true,
		},
		sim.Scenario{
			Name: "redis-restart-aof", Description: "Redis with an append-only file (fsync every second) is killed and restarts from the file: the leases come back and their holders carry on.",
			Instances: 3, Endpoints: 9, Duration: 130 * s,
			Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.RedisRestartAOF{}}},
			Steady: w(110*s, 130*s), ExpectBalance: true, Fencing: true, NeedsBackendControl: true,
		},
		sim.Scenario{
			Name: "redis-restart-empty-churn", Description: "A holder stops gracefully, Redis restarts empty, and a new instance joins as it returns, with fencing off: only the lease system can keep two pollers apart.",
			Instances: 3, Endpoints: 9, Duration: 170 * s,
			Steps: chaos.Schedule{
				{At: 60 * s, Fault: chaos.Stop{Slot: 0}},
				{At: 62 * s, For: 2 * s, Fault: chaos.RedisRestart{}},
				{At: 64 * s, Fault: chaos.Start{Count: 1}},
			},
			Steady: w(150*s, 170*s), ExpectBalance: true, NeedsBackendControl: true,
		},
		sim.Scenario{
			Name: "election-redis-restart-from-snapshot", Description: "Redis snapshots, runs on for 1.5 TTL, is killed and restarts from that snapshot: the epoch comes back without the leadership; no second leader may act while the first may still believe.",
			System: "election-redis", Instances: 3, Endpoints: 1, Duration: 180 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.RedisRestartFromSnapshot{}}},
			Steady: w(160*s, 180*s), Fencing: true, NeedsBackendControl: true,
		},
	)
}
