package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// clusterScenarios run on a private Redis Cluster (three primaries with a replica each; see
// package deploy), where the reference keeps each endpoint's lease, fencing counter and epoch in the
// endpoint's own hash slot (lease.LayoutCluster). A fault names a shard by an endpoint: the shard that
// serves that endpoint's slot, which holds about a third of the endpoints.
//
// A promotion or a slot move hands an endpoint's epoch key to a node with another run_id, so the
// reference's guard re-arms for that endpoint once and grants nothing for it for one LeaseTTL (see
// lease/doc.go). Holders whose leases reached the new node keep renewing; an endpoint whose holder must
// change then (its lease was lost with the killed primary) waits the failure detection plus one
// LeaseTTL: beyond the spec's failover bound, which assumes a Redis that keeps acknowledged writes. A
// shard's primary lost with its unreplicated writes lies outside that model, so the kill is declared
// Outside, like Sentinel's; a slot migration keeps every write (MIGRATE copies values and TTLs), so it
// is inside and the bounds hold across it.
//
// cluster-node-timeout is 1 s of real time whatever the time scale: at time scale 0.1 a replica takes
// over about 2 s (20 s of spec time) after its primary is killed.
var clusterScenarios = []sim.Scenario{
	{
		Name: "cluster-primary-kill",
		Description: "The primary of the shard serving ep-0 is killed (SIGKILL) while leases are held and renewed; its replica is promoted. " +
			"That shard's endpoints re-arm their guard on the replica and get no grant for one lease TTL, so their failover takes up to " +
			"failure detection plus one TTL (outside the spec's bound, declared Outside); fencing must keep every stale poll from the resource.",
		Instances: 3, Endpoints: 9, Duration: 150 * s, Topology: sim.TopologyCluster,
		Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.ShardPrimaryKill{Of: "ep-0"}}},
		Steady: w(130*s, 150*s), ExpectBalance: true, Fencing: true,
		Outside: []string{chaos.ShardPrimaryKill{}.Name()},
	},
	{
		Name: "cluster-slot-migration",
		Description: "The slot of ep-0 moves to another shard, key by key 2 s apart, while its lease is held and renewed: clients follow ASK " +
			"then MOVED redirects. MIGRATE keeps values and TTLs, so renewals go on and no holder changes; only a grant of a moved endpoint " +
			"waits one lease TTL (its guard re-arms on the new shard).",
		Instances: 3, Endpoints: 9, Duration: 120 * s, Topology: sim.TopologyCluster,
		Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.SlotMigration{Of: "ep-0", Pause: 2 * s}}},
		Steady: w(100*s, 120*s), ExpectBalance: true, Fencing: true,
	},
}

func init() { all = append(all, clusterScenarios...) }

// ciCluster is the one cluster scenario the ci suite runs: each cluster run starts six processes, and
// one shows the topology works end to end; the 'cluster' suite runs them all.
const ciCluster = "cluster-primary-kill"

// clusterNotInCI lists the cluster scenarios the ci suite leaves out.
func clusterNotInCI() []string {
	var out []string
	for _, n := range clusterNames() {
		if n != ciCluster {
			out = append(out, n)
		}
	}
	return out
}

// clusterNames lists the cluster scenarios.
func clusterNames() []string {
	var out []string
	for _, sc := range append(append([]sim.Scenario(nil), clusterScenarios...), clusterFailoverScenarios...) {
		out = append(out, sc.Name)
	}
	return out
}
