package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

// Scenarios of how the fleet shares the endpoints. Instance IDs carry their boot time, so the hash
// weights of a run cannot be chosen in advance: a scenario that judges the spread of the endpoints must
// make an uneven spread all but certain for an assignment without load caps, not merely possible. With
// nine endpoints on three instances, uncapped rendezvous hashing happens to land within one of E/N on
// about half the draws; with forty on four, and then on five, it does so on well under one in a
// hundred, while a capped assignment is within one by construction.
func init() {
	all = append(all,
		sim.Scenario{
			Name: "balance-4x40-join", Description: "Four instances share forty endpoints, then a fifth joins: at each size every instance holds within one of E/N.",
			Instances: 4, Endpoints: 40, Duration: 150 * s,
			Steps:         chaos.Schedule{{At: 90 * s, Fault: chaos.Start{Count: 1}}},
			Steady:        []history.Window{{From: 65 * s, To: 90 * s}, {From: 125 * s, To: 150 * s}},
			ExpectBalance: true,
		},
	)
}
