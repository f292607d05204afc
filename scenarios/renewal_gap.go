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
		// The leader renews every 10 s, so its first GET after 60 s comes by 70 s and the pause holds it
		// until 105-115 s. Its key, last extended before the pause, expires by 100 s, and a standby
		// takes the role at its next attempt. A leader that renews by GET then EXPIRE wakes to send the
		// EXPIRE its GET decided on: it lands on the successor's key (or on no key) and the leader
		// believes it renewed, so two leaders act until its next GET.
		sim.Scenario{
			Name: "election-pause-after-get-redis",
			Description: "The leader freezes for 1.5 TTL just after its renewal's GET is answered, before it acts on the answer (a pause at the wire): " +
				"a leader that renews by GET then EXPIRE wakes and sends the EXPIRE its stale GET decided on, on a key that expired meanwhile " +
				"and names a successor, and believes it renewed. An atomic renewal sends no GET and is never paused.",
			System:    "election-redis",
			Instances: 3, Endpoints: 1, Duration: 170 * s,
			Steps:  chaos.Schedule{{At: 60 * s, For: 40 * s, Fault: chaos.WirePause{Of: "ep-0", Command: "GET", After: true, For: 45 * s}}},
			Steady: w(150*s, 170*s),
		},
		// The held PEXPIREs of one or two renewal rounds (the window is 1.5 renewal intervals long) land
		// 60 s after they were sent, at 120-135 s; the holder is frozen from 76 s, so its keys expire by
		// about 106 s and another instance takes ep-0; that instance crashes at 108 s. A plain PEXPIRE
		// landing at least 12 s after the crash resets the dead instance's key to a full TTL, so the
		// takeover comes at least 12 s past one TTL after the crash.
		sim.Scenario{
			Name: "renewal-gap-pause-crash",
			Description: "A holder's PEXPIRE requests are held on the wire for 2 TTL during 15 s; then it freezes, its endpoints move, and the instance " +
				"that took ep-0 crashes before the held requests land: a renewal that names no holder (a plain PEXPIRE) keeps the dead instance's " +
				"keys alive past one TTL after the crash. A renewal that compares the holder (the reference's Lua script) sends no PEXPIRE and is not held.",
			Instances: 3, Endpoints: 9, Duration: 200 * s,
			Steps: chaos.Schedule{
				{At: 60 * s, For: 15 * s, Fault: chaos.SlowRequests{Of: "ep-0", Delay: 60 * s, Match: "pexpire"}},
				{At: 76 * s, For: 45 * s, Fault: chaos.Pause{Of: "ep-0"}},
				{At: 108 * s, Fault: chaos.Crash{Of: "ep-0"}},
			},
			Steady: w(170*s, 200*s), ExpectBalance: true, Fencing: true,
		},
	)
}
