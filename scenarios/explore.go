package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// exploration are the scenarios of the composing nemesis (chaos.Explore): episodes of overlapping
// faults of different classes drawn from the seed, for the lease manager and for the Redis election.
// They are for finding what no written scenario reaches, over many seeds (the explore suite, simrun
// campaign), and are not part of the ci suite, whose every scenario is written for one situation.
var exploration = []sim.Scenario{
	{
		Name: "explore", Description: "The composing nemesis: Redis restarts and snapshot restores while a holder is stalled, cut off or paused, " +
			"acquires and renewals that land after their callers gave up, crashes during handoffs and joins, restarts during starts, drawn from the seed; " +
			"endpoints enforce fencing.",
		Instances: 4, Endpoints: 12, Duration: 360 * s,
		Explore: &chaos.ExploreOptions{From: 50 * s, To: 340 * s},
		Steady:  w(345*s, 360*s), NeedsBackendControl: true,
		// The fleet is balanced again after the last episode's recovery: hashing without its load cap
		// leaves an instance of 4 to 6 with two endpoints more or fewer than its share of 12.
		ExpectBalance: true,
		// Pauses are among the faults: only fencing at the resource can refuse a woken zombie's poll.
		Fencing: true,
		// A drift bound of 5 %, as stall-slow-clock declares: its episode runs a clock 4.5 % slow, and
		// deadline arithmetic that leaves the bound out is unsafe only past margin/TTL (3.3 %), so at
		// the default 1 % no run could tell it apart.
		Timing: sim.Timing{DriftBound: 0.05},
	},
	{
		Name: "explore-election-redis", Description: "The composing nemesis against the Redis election: three roles, every instance contending for each; " +
			"the leaders' terms are the fencing tokens.",
		System:    "election-redis",
		Instances: 4, Endpoints: 3, Duration: 360 * s,
		Explore: &chaos.ExploreOptions{From: 50 * s, To: 340 * s},
		Steady:  w(345*s, 360*s), NeedsBackendControl: true,
		Fencing: true,
	},
}

// explorationNames lists the composing nemesis's scenarios.
func explorationNames() []string {
	var out []string
	for _, sc := range exploration {
		out = append(out, sc.Name)
	}
	return out
}

func init() { all = append(all, exploration...) }
