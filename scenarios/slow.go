package scenarios

import (
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// Scenarios of a slow link rather than a lost one: requests or replies of one instance held on the
// wire past the TTL and delivered after the client gave up, so that a late renewal or release lands
// after the lease changed hands; and of an assignment that flaps while a release is still on the wire.
func init() {
	const ms = time.Millisecond
	const pinned = -1 // a step whose time is part of a chain of causes must not move on its own
	// The reference's release call carries its announcement "release <instance> <endpoint>"; a system
	// whose releases do not is held nothing by these steps, which then test only the handoff itself.
	const releaseMatch = "release "
	all = append(all,
		sim.Scenario{
			Name: "slow-renewal", Description: "A holder's requests are held on the wire for 1.5 TTL during 15 s: its renewals time out, its endpoints move, and the stale renewals land long after on leases that others hold.",
			Instances: 3, Endpoints: 9, Duration: 160 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 15 * s, Fault: chaos.SlowRequests{Of: "ep-0", Delay: 45 * s}}},
			Steady: w(140*s, 160*s), ExpectBalance: true,
		},
		sim.Scenario{
			Name: "slow-replies", Description: "A holder's replies are held on the wire for 1.5 TTL during 15 s: its renewals take effect but their replies come after it gave up; it must not believe past its deadline.",
			Instances: 3, Endpoints: 9, Duration: 160 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 15 * s, Fault: chaos.SlowReplies{Of: "ep-0", Delay: 45 * s}}},
			Steady: w(140*s, 160*s), ExpectBalance: true,
		},
		sim.Scenario{
			Name: "slow-release-handoff", Description: "A new instance joins while a holder's releases are held on the wire for 1.5 TTL: its handoff releases land 45 s late, after the new owner took the leases.",
			Instances: 2, Endpoints: 10, Duration: 160 * s,
			Steps: chaos.Schedule{
				{At: 59 * s, For: 5 * s, Fault: chaos.SlowRequests{Slot: 0, Delay: 45 * s, Match: releaseMatch}},
				{At: 60*s + 500*ms, Fault: chaos.Start{Count: 1}},
			},
			Steady: w(140*s, 160*s), ExpectBalance: true,
		},
		sim.Scenario{
			// The new instance is preferred for endpoints of slot 0, whose handoff releases (sent at about
			// 60.3 s) are held until about 105.3 s. It freezes as it starts, before it holds anything; its
			// heartbeat expires and the endpoints return to slot 0, which acquires them again (about 98 s).
			// The late releases land and delete those leases while slot 0 still believes; the new instance
			// wakes just after (106 s), still preferring the endpoints, and takes them at once. A session
			// flaps on top.
			Name: "flapping-assignment", Description: "Endpoints move to a joining instance and back while their holder's handoff releases are held on the wire; the late releases must not delete the re-acquired leases.",
			Instances: 2, Endpoints: 10, Duration: 170 * s,
			Steps: chaos.Schedule{
				{At: 59 * s, For: 5 * s, Fault: chaos.SlowRequests{Slot: 0, Delay: 45 * s, Match: releaseMatch}},
				{At: 60*s + 200*ms, Fault: chaos.Start{Count: 1}},
				{At: 60*s + 200*ms, For: 45*s + 800*ms, Fault: chaos.Pause{Slot: 2}},
				{At: 120 * s, Fault: chaos.SessionChange{Change: "flap", ID: "ep-1"}},
			},
			// The joining instance's pause takes hold at its first poll, after it has taken endpoints:
			// it wakes with that stale belief and polls once, which no lease design can stop (a pause
			// lies outside every lease system's assumptions). Fencing refuses that poll, so what the run
			// judges is the lease system's own part: the late releases.
			Steady: w(150*s, 170*s), ExpectBalance: true, Fencing: true,
		},
		sim.Scenario{
			// Reported from outside: slot 0's handoff release held on the wire past the call bound while
			// the assignment of its endpoint went A -> C -> A, after which A was said to believe the
			// endpoint 2.7 s (at a tenth of spec) with no value of its own in the key. The joiner (slot 2)
			// takes its share at 60 s; slot 0 hands its part of it off once its poll in flight has ended
			// (by 61 s), and each release, announced, is held 4 s: past the 3 s call bound, so it times out
			// at the client (slot 0's link is unhealthy until a PING is answered) and lands 1 s later. The
			// joiner is refused those endpoints meanwhile (the old values are still the leases) and stops
			// at 62 s, while the releases are still on the wire: the endpoints come back to slot 0, which
			// may acquire them only once their releases have returned, and then does so under new
			// holdings (its release of the old value first, in the same round trip). The run judges that
			// no instance believes a holding whose value is not in the key for longer than a renewal
			// interval and a call bound (the checker's stale-belief), and that the held releases, landing
			// before or after the re-acquire, delete nothing but their own values (single-holder).
			Name: "held-release-assigned-back", Description: "A holder's handoff releases are held on the wire past the call bound while an instance joins and leaves at once (the assignment goes A -> C -> A): the holder re-acquires once its releases have returned, and no belief may outlive its value in the key by more than a renewal interval and a call bound.",
			Instances: 2, Endpoints: 10, Duration: 100 * s,
			Steps: chaos.Schedule{
				{At: 59 * s, For: 5 * s, Jitter: pinned, Fault: chaos.SlowRequests{Slot: 0, Delay: 4 * s, Match: releaseMatch}},
				{At: 60 * s, Jitter: pinned, Fault: chaos.Start{Count: 1}},
				{At: 62 * s, Jitter: pinned, Fault: chaos.Stop{Slot: 2}},
			},
			Steady: w(80*s, 100*s), ExpectBalance: true,
		},
	)
}
