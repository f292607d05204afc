package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// scale holds scenarios too large for the ci suite: Get finds them, All and Names (and so every suite
// and 'simrun list') leave them out. They are run by hand and by 'simrun bench' for the figures of
// docs/performance.md.
var scale = []sim.Scenario{
	{
		Name: "scale-100x10k",
		Description: "A hundred instances share 10,000 endpoints: they start over 30 s, as a rolling deploy does, " +
			"then one stops gracefully and one crashes; every invariant must hold at that size. " +
			"Not in any suite: about a minute of wall time and a gigabyte of memory at time scale 0.1.",
		Instances: 100, Endpoints: 10000, Duration: 150 * s, StartJitter: 30 * s,
		Steps: chaos.Schedule{
			{At: 80 * s, Fault: chaos.Stop{Slot: 10}},
			{At: 90 * s, Fault: chaos.Crash{Slot: 20}},
		},
		Steady: w(130*s, 150*s), ExpectBalance: true,
	},
}
