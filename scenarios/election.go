package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// electionScenarios are the leader-election scenarios, once per backend. A role is an endpoint: the
// leader acts on the role's resource every poll interval with its term as fencing token, so "never two
// leaders acting" is judged exactly like "never two pollers". Faults target the current leader ("Of").
//
// The Redis backend holds back the first grant of a role for one TTL on an empty dataset (the
// fresh-dataset guard), so its faults come at 60 s; PostgreSQL elects at once and needs no warm-up, but
// uses the same times for comparability.
func electionScenarios() []sim.Scenario {
	const role = "ep-0"
	type spec struct {
		name, desc string
		instances  int
		duration   int // seconds
		steps      chaos.Schedule
		steady     [2]int
		fencing    bool
		onlyPG     bool
	}
	specs := []spec{
		{name: "leader-crash", desc: "The leader crashes; a standby leads within TTL: its holding expires at most a TTL after the crash, and a refused standby contends at that expiry.",
			instances: 3, duration: 130, steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Crash{Of: role}}}, steady: [2]int{110, 130}},
		{name: "leader-partition", desc: "The leader is cut off from the backend; it stops acting before a standby starts.",
			instances: 3, duration: 150, steps: chaos.Schedule{{At: 60 * s, For: 50 * s, Fault: chaos.Partition{Of: role}}}, steady: [2]int{130, 150}},
		{name: "leader-one-way-partition", desc: "The leader's requests arrive but its replies are lost; renewals take effect unseen. " +
			"Redis: after its first unanswered call the leader stops believing and sends nothing but probes and its release, which lands and lets a standby in, " +
			"so failover takes at most the next renewal, a call timeout and a poll interval, well inside the bound for blind writes. PostgreSQL: the server's dead-peer bound applies.",
			instances: 3, duration: 150, steps: chaos.Schedule{{At: 60 * s, For: 50 * s, Fault: chaos.Partition{Of: role, OneWay: true}}}, steady: [2]int{130, 150}},
		{name: "backend-outage", desc: "Every candidate loses the backend for 40 s; nobody acts, then one leader resumes.",
			instances: 3, duration: 150, steps: chaos.Schedule{{At: 60 * s, For: 40 * s, Fault: chaos.Outage{}}}, steady: [2]int{135, 150}},
		{name: "graceful-handoff", desc: "The leader stops gracefully; a standby leads within milliseconds.",
			instances: 3, duration: 100, steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Stop{Of: role}}}, steady: [2]int{70, 100}},
		{name: "signal-stop", desc: "The leader stops as a service does on SIGTERM: the context it was started with is cancelled, then Stop is called. " +
			"Stop must still release: a standby leads within the handoff bound (the leader's work in flight and a few round trips), not a TTL later.",
			instances: 3, duration: 100, steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Stop{Of: role, Signal: true}}}, steady: [2]int{70, 100}},
		{name: "herd-10", desc: "Ten candidates start at the same moment; exactly one leads.",
			instances: 10, duration: 90, steady: [2]int{65, 90}},
		{name: "leader-pause", desc: "The leader freezes for 1.5 TTL and wakes with its old term; the resource refuses it by fencing. " +
			"The freeze takes hold at the leader's next action, and failover is measured from there: its holding lasts at most a TTL from its last renewal. PostgreSQL: the server's dead-peer bound applies.",
			instances: 3, duration: 150, steps: chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.Pause{Of: role}}}, steady: [2]int{130, 150},
			fencing: true},
		{name: "conn-reset", desc: "The leader's PostgreSQL connection is reset: its session and advisory lock are gone; leadership ends before its deadline and is won again.",
			instances: 3, duration: 120, steps: chaos.Schedule{{At: 60 * s, Fault: chaos.ConnReset{Of: role}}}, steady: [2]int{100, 120}, onlyPG: true},
		{name: "half-open", desc: "The leader's PostgreSQL connection goes half-open (nothing passes, nothing closes); the server must free the lock within its dead-peer bound.",
			instances: 3, duration: 160, steps: chaos.Schedule{{At: 60 * s, For: 80 * s, Fault: chaos.Partition{Of: role}}}, steady: [2]int{145, 160},
			onlyPG: true},
	}
	var out []sim.Scenario
	for _, backend := range []struct{ suffix, system string }{{"redis", "election-redis"}, {"pg", "election-postgres"}} {
		for _, sp := range specs {
			if sp.onlyPG && backend.suffix != "pg" {
				continue
			}
			sc := sim.Scenario{
				Name:        "election-" + sp.name + "-" + backend.suffix,
				Description: sp.desc,
				System:      backend.system,
				Instances:   sp.instances, Endpoints: 1,
				Duration: secs(sp.duration), Steps: sp.steps,
				Steady:  w(secs(sp.steady[0]), secs(sp.steady[1])),
				Fencing: sp.fencing,
			}
			out = append(out, sc)
		}
	}
	return out
}
