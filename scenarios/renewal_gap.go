package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// A renewal made of two commands, GET and then EXPIRE, has a gap between them: the GET can say "still
// yours" while the EXPIRE never lands in time. This scenario holds only the leader's EXPIRE requests on
// the wire (go-redis sends the command name in lower case), so its GETs keep answering. An atomic renewal
// (a Lua script, as the reference's) sends no EXPIRE and is not held: for it the run is a quiet one.
func init() {
	all = append(all,
		sim.Scenario{
			Name: "election-renewal-gap-redis",
			Description: "The leader's EXPIRE requests are held on the wire for 1.5 TTL during 40 s: a leader that renews by GET then EXPIRE sees its GETs answered, " +
				"its key expires and a standby is elected, and the held EXPIREs land later on the successor's key. An atomic renewal sends no EXPIRE and is not held.",
			System:    "election-redis",
			Instances: 3, Endpoints: 1, Duration: 170 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 40 * s, Fault: chaos.SlowRequests{Of: "ep-0", Delay: 45 * s, Match: "expire"}}},
			Steady: w(150*s, 170*s),
		},
	)
}
