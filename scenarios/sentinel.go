package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// sentinelScenarios run on a private Sentinel set (a primary, two replicas, three sentinels; see
// package deploy): Redis as most teams deploy it. Replication is asynchronous, so a write the
// primary acknowledged can be missing on the replica the sentinels promote; the checker then finds a
// lease operation whose outcome the key's later history contradicts and reports it as a lost
// acknowledged write, next to the promotion. Endpoints enforce fencing, the resource's protection
// whatever the backend loses.
//
// Sentinel's own timings scale with the run (down-after 5 s, failover timeout 60 s in spec time, with
// floors of 2 s and 2 s of real time: deploy.SentinelOptions), but its internal periods (a 1 s ping, a
// 100 ms timer, the election's random delays) do not: at time scale 0.1 down-after is 2 s and a
// promotion takes about 3 to 4 s of real time, 30 to 40 s of spec time.
var sentinelScenarios = []sim.Scenario{
	{
		Name: "sentinel-primary-kill",
		Description: "The Sentinel set's primary is killed (SIGKILL) while leases are held and renewed; the sentinels promote a replica. " +
			"Whatever the promoted replica had not received is lost; fencing must keep every stale poll from the resource.",
		Instances: 3, Endpoints: 9, Duration: 190 * s, Topology: sim.TopologySentinel,
		Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.PrimaryKill{}}},
		// A promotion comes 30-40 s (spec time) after the kill and re-arms the fresh-dataset guard: the
		// table's deadline is the promotion + notice + TTL, at most about 144 s; the steady window starts
		// after it and the rebalancing that follows.
		Steady: w(160*s, 190*s), ExpectBalance: true, Fencing: true,
		Outside: []string{chaos.PrimaryKill{}.Name()},
	},
	{
		Name: "sentinel-primary-isolated",
		Description: "The primary is cut off from its replicas and the sentinels for 50 s while every instance still reaches it: " +
			"a replica is promoted, and until the old primary is demoted it acknowledges writes that are then discarded.",
		Instances: 3, Endpoints: 9, Duration: 170 * s, Topology: sim.TopologySentinel,
		Steps:  chaos.Schedule{{At: 60 * s, For: 50 * s, Fault: chaos.PrimaryIsolate{}}},
		Steady: w(150*s, 170*s), ExpectBalance: true, Fencing: true,
		Outside: []string{chaos.PrimaryIsolate{}.Name()},
	},
	// The kill drops what the primary's peer link holds (DropInFlight): a kill alone lost nothing, since
	// the proxy delivers late what the primary had already sent (ten seeds of each of reference and
	// reference-wait: writes acknowledged 12 ms before the kill were on the promoted replica). A longer
	// delay would not change that, and cannot grow much: the sentinels' pings cross the same links
	// (down-after is 2 s of real time at time scale 0.1), and reference-wait's WAIT, bounded by half
	// the call's timeout (1.5 s spec), already times out on many round trips at this delay; at
	// 4 s ± 1 s it held no endpoint at all at the kill on four seeds of four.
	{
		Name: "sentinel-replication-lag",
		Description: "Every node's peer link slows by 2 s ± 1 s per round trip, so the replication stream reaches the replicas about a second late; " +
			"then the primary is killed together with its peer link, so what was still on its way is lost with it, and a replica missing " +
			"about the last second of writes is promoted.",
		Instances: 3, Endpoints: 9, Duration: 200 * s, Topology: sim.TopologySentinel,
		Steps: chaos.Schedule{
			{At: 60 * s, For: 40 * s, Fault: chaos.ReplicationLatency{Latency: 2 * s, Jitter: 1 * s}},
			{At: 90 * s, Fault: chaos.PrimaryKill{DropInFlight: true}, Jitter: -1},
		},
		// The promotion comes 30-40 s after the kill; its deadline (+ notice + TTL) by about 174 s.
		Steady: w(180*s, 200*s), ExpectBalance: true, Fencing: true,
		Outside: []string{chaos.PrimaryKill{}.Name(), chaos.ReplicationLatency{}.Name()},
	},
	{
		Name: "sentinel-manual-failover",
		Description: "An operator runs SENTINEL FAILOVER while leases are held and renewed: a replica is promoted with no node down. " +
			"Sentinel does not stop writes on the old primary first, so a write it acknowledges before it is demoted can be lost.",
		Instances: 3, Endpoints: 9, Duration: 140 * s, Topology: sim.TopologySentinel,
		Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.ManualFailover{}}},
		Steady: w(120*s, 140*s), ExpectBalance: true, Fencing: true,
		Outside: []string{chaos.ManualFailover{}.Name()},
	},
	// The Redis election on a Sentinel set: the leader's holding is one key, lost like any other.
	{
		Name:        "election-sentinel-primary-kill-redis",
		Description: "The Sentinel set's primary is killed while a leader holds the role; a replica is promoted. Fencing must refuse any stale leader's action.",
		System:      "election-redis", Instances: 3, Endpoints: 1, Duration: 150 * s, Topology: sim.TopologySentinel,
		Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.PrimaryKill{}}},
		Steady: w(130*s, 150*s), Fencing: true,
		Outside: []string{chaos.PrimaryKill{}.Name()},
	},
	{
		Name:        "election-sentinel-primary-isolated-redis",
		Description: "The primary is cut off from its replicas and the sentinels for 50 s while every candidate still reaches it; the old primary's acknowledgements are discarded when it is demoted.",
		System:      "election-redis", Instances: 3, Endpoints: 1, Duration: 170 * s, Topology: sim.TopologySentinel,
		Steps:  chaos.Schedule{{At: 60 * s, For: 50 * s, Fault: chaos.PrimaryIsolate{}}},
		Steady: w(150*s, 170*s), Fencing: true,
		Outside: []string{chaos.PrimaryIsolate{}.Name()},
	},
}

func init() { all = append(all, sentinelScenarios...) }

// ciSentinel is the one Sentinel scenario the ci suite runs: each Sentinel run starts six processes,
// and one shows the topology works end to end; the 'sentinel' suite runs them all.
const ciSentinel = "sentinel-primary-kill"

// sentinelNames lists the Sentinel scenarios.
func sentinelNames() []string {
	var out []string
	for _, sc := range sentinelScenarios {
		out = append(out, sc.Name)
	}
	return out
}

// sentinelNotInCI lists the Sentinel scenarios the ci suite leaves out.
func sentinelNotInCI() []string {
	var out []string
	for _, n := range sentinelNames() {
		if n != ciSentinel {
			out = append(out, n)
		}
	}
	return out
}
