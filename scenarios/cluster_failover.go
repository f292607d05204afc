package scenarios

import (
	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/sim"
)

// clusterFailoverScenarios are more Redis Cluster scenarios (see clusterScenarios for the topology and
// why a shard's primary killed is declared Outside): the Redis election on a cluster, and a killed
// primary that is started again and rejoins.
//
// The election keeps a role's keys (holding, term floor, epoch) in the role's hash slot, so one shard
// holds the whole election. A kill of that shard's primary stops every renewal until the replica is
// promoted (about 2 s of real time at any scale: cluster-node-timeout is 1 s), which is longer than a
// lease TTL at time scale 0.1 (3 s less the safety margin): the leader's holding lapses at its local
// deadline, and the promoted replica, another server run, re-arms the role's guard and grants nobody
// the role for one TTL. A new leader therefore acts about promotion + TTL + a retry interval after the
// kill (scale 0.1: about 2 + 3 + 1 s, some 60 s of spec time); the spec's bound assumes a backend that
// keeps acknowledged writes and does not hold. What must hold is safety: never two leaders believing or
// acting at once, terms increasing across the promotion, fencing refusing any stale action.
var clusterFailoverScenarios = []sim.Scenario{
	{
		Name: "cluster-election-primary-kill",
		Description: "The primary of the shard holding the election's keys is killed (SIGKILL) while a leader renews; its replica is promoted. " +
			"The leader's renewals fail until then, so its holding lapses at its local deadline; the promoted replica re-arms the role's guard, " +
			"so a leader acts again after the promotion plus one TTL (outside the spec's bound, declared Outside). " +
			"Never two leaders at once, terms must keep increasing, and fencing must keep every stale action from the resource.",
		System: "election-redis", Instances: 3, Endpoints: 1, Duration: 150 * s, Topology: sim.TopologyCluster,
		Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.ShardPrimaryKill{Of: "ep-0"}}},
		Steady: w(130*s, 150*s), Fencing: true,
		Outside: []string{chaos.ShardPrimaryKill{}.Name()},
	},
	{
		Name: "cluster-primary-kill-rejoin",
		Description: "The primary of the shard serving ep-0 is killed (SIGKILL); its replica is promoted. 40 s later the killed node starts again " +
			"from its nodes.conf, empty, and must rejoin as the promoted node's replica, copying its dataset. Then the promoted node is killed in turn " +
			"and the rejoined one takes the shard back: the leases, fencing counters and epochs it copied must carry on (tokens never go backwards).",
		Instances: 3, Endpoints: 9, Duration: 220 * s, Topology: sim.TopologyCluster,
		Steps: chaos.Schedule{
			{At: 60 * s, Fault: chaos.ShardPrimaryKill{Of: "ep-0"}},
			{At: 100 * s, Fault: chaos.ShardNodeRestart{}},
			{At: 130 * s, Fault: chaos.ShardPrimaryKill{Of: "ep-0"}},
		},
		Steady: w(200*s, 220*s), ExpectBalance: true, Fencing: true,
		Outside: []string{chaos.ShardPrimaryKill{}.Name()},
	},
}

func init() { all = append(all, clusterFailoverScenarios...) }
