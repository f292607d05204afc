package scenarios

import (
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Scenarios of the instance's own lifecycle: how it stops, and what a stop during its start leaves.
//
// A graceful stop releases every lease and tells the fleet, so the next owners poll within
// milliseconds: the Stop waits for a poll in flight (at most one poll, 1 s), then one release batch, one
// announcement and one acquire, each a loopback round trip. A stop that leaves its leases to expire
// hands over a lease TTL (30 s) later. The bound table holds every graceful stop to its handoff bound
// (the poll duration and the tolerance), so the difference shows.
func init() {
	all = append(all,
		sim.Scenario{
			Name: "signal-stop",
			Description: "A holder stops as a service does on SIGTERM: the context it was started with is cancelled, then Stop is called. " +
				"It must still release at once: each endpoint it held is polled by another instance within its handoff bound " +
				"(a poll in flight, at most 1 s, and a few round trips), not a lease TTL later.",
			Instances: 3, Endpoints: 9, Duration: 90 * s,
			Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.Stop{Slot: 0, Signal: true}}},
			Steady: w(75*s, 90*s), ExpectBalance: true,
		},
		sim.Scenario{
			// The stopping instance's release batch is held on the wire for 1.5 s (its call timeout is 3 s,
			// so Stop still succeeds), and heartbeats come every 1.2 s: a heartbeat loop that still runs
			// while Stop releases writes the heartbeat back after Stop deleted it, whatever the seed. The
			// fleet then counts the stopped instance alive for a heartbeat TTL and leaves its endpoints
			// to it.
			Name: "stop-heartbeat-race",
			Description: "A holder stops while its releases are slow on the wire (held 1.5 s) and its heartbeat is due every 1.2 s; the heartbeat it deleted must stay deleted, " +
				"so the others take its endpoints within the handoff bound lengthened by the hold (a poll in flight, 1 s, the held releases, 1.5 s, and a few round trips), not a heartbeat TTL later.",
			Instances: 3, Endpoints: 9, Duration: 90 * s,
			Timing: sim.Timing{HeartbeatInterval: 1200 * time.Millisecond},
			// Written for one moment, the two steps move together: the releases are held from the stop on.
			Steps: chaos.Schedule{
				{At: 60 * s, For: 5 * s, Fault: chaos.SlowRequests{Slot: 2, Delay: 1500 * time.Millisecond, Match: "release "}},
				{At: 60 * s, Fault: chaos.Stop{Slot: 2}},
			},
			Steady: w(75*s, 90*s), ExpectBalance: true,
		},
		sim.Scenario{
			Name: "stop-during-start",
			Description: "A fourth instance starts while its link to Redis is cut, so its start keeps retrying, and is stopped 5 s later, before the link heals: " +
				"Stop must make Start give up, nothing may panic or hang, and once the link heals the stopped instance sends nothing; the fleet carries on undisturbed.",
			Instances: 3, Endpoints: 9, Duration: 100 * s,
			// The fault lasts about 21 s: 5 s, the Stop (its clean-up times out on the cut link, 3 s), the
			// watch after the heal (a renewal interval and a call timeout, 13 s).
			Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.AbortedStart{After: 5 * s}}},
			Steady: w(88*s, 100*s), ExpectBalance: true,
		},
	)
}
