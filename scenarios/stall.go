package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Stalls: a holder's Redis calls hang, neither answered nor failed, for 1.5 TTL while its polls and
// timers go on. No renewal fails fast, so nothing but the holder's local deadline can end its belief
// before the lease expires in Redis and another instance takes the endpoint. A stall lies inside every
// lease system's assumptions (a process that runs and reads a sane clock), so the endpoints run without
// fencing: a poll after the deadline shows as a double poll.
func init() {
	all = append(all,
		sim.Scenario{
			Name:        "stall-past-ttl",
			Description: "A holder's Redis calls hang for 1.5 TTL while it keeps polling; only its local deadline can stop it before others take its endpoints.",
			Instances:   3, Endpoints: 9, Duration: 150 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.Stall{Of: "ep-0"}}},
			Steady: w(135*s, 150*s), ExpectBalance: true,
		},
		sim.Scenario{
			Name:        "election-leader-stall-redis",
			Description: "The leader's Redis calls hang for 1.5 TTL while it keeps acting; its local deadline must end its leadership before a standby is elected.",
			System:      "election-redis",
			Instances:   3, Endpoints: 1, Duration: 150 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.Stall{Of: "ep-0"}}},
			Steady: w(130*s, 150*s),
		},
	)
}
