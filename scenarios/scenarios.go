// Package scenarios is Tenure's catalogue of named lease scenarios and suites, as data.
//
// Every scenario is written in spec time (lease TTL 30 s, renewal 10 s, poll every 5 s); a run's time
// scale compresses it. Each scenario begins with a warm-up of one TTL plus a settling period: a
// correct lease system refuses every grant for one TTL after it first sees an empty Redis (it cannot tell
// a new dataset from one that lost its data), so the first faults come at 60 s.
package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

const s = time.Second

func secs(n int) time.Duration { return time.Duration(n) * s }

func w(from, to time.Duration) []history.Window { return []history.Window{{From: from, To: to}} }

var all = []sim.Scenario{
	{
		Name: "single-instance", Description: "One instance acquires and polls every endpoint.",
		Instances: 1, Endpoints: 5, Duration: 90 * s, Steady: w(60*s, 90*s), ExpectBalance: true,
	},
	{
		Name: "balance-3x9", Description: "Three instances and nine endpoints settle at exactly three each.",
		Instances: 3, Endpoints: 9, Duration: 90 * s, Steady: w(65*s, 90*s), ExpectBalance: true,
	},
	{
		Name: "thundering-herd-5x10", Description: "Five instances start at the same moment on ten endpoints; none is ever polled twice.",
		Instances: 5, Endpoints: 10, Duration: 90 * s, Steady: w(65*s, 90*s), ExpectBalance: true,
	},
	{
		Name: "contended-acquire", Description: "Ten instances contend for three endpoints: one poller each, the rest stand by.",
		Instances: 10, Endpoints: 3, Duration: 90 * s, Steady: w(65*s, 90*s), ExpectBalance: true,
	},
	{
		Name: "scale-up-2-to-3", Description: "A third instance joins two that share nine endpoints; it takes its share without a double poll.",
		Instances: 2, Endpoints: 9, Duration: 140 * s, Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Start{Count: 1}}},
		Steady: w(110*s, 140*s), ExpectBalance: true,
	},
	{
		Name: "join-2-to-3-x10", Description: "A third instance joins two that share ten endpoints; it ends with three or four.",
		Instances: 2, Endpoints: 10, Duration: 140 * s, Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Start{Count: 1}}},
		Steady: w(110*s, 140*s), ExpectBalance: true,
	},
	{
		Name: "scale-to-10", Description: "A fleet of two grows to ten on twenty endpoints: eight instances start at once (--instances sets the fleet before them, so --instances 50 grows it to 58).",
		Instances: 2, Endpoints: 20, Duration: 150 * s, Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Start{Count: 8}}},
		Steady: w(120*s, 150*s), ExpectBalance: true,
	},
	{
		Name: "scale-down-3-to-2", Description: "One of three instances stops gracefully; the other two take over its endpoints at once.",
		Instances: 3, Endpoints: 9, Duration: 130 * s, Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Stop{Slot: 2}}},
		Steady: w(100*s, 130*s), ExpectBalance: true,
	},
	{
		Name: "voluntary-release", Description: "A holder stops gracefully; its leases are released and picked up within milliseconds, not at the next tick: each endpoint it held is polled by another instance within its handoff bound (its Stop waits for a poll in flight, at most 1 s, then a few round trips).",
		Instances: 3, Endpoints: 9, Duration: 110 * s, Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Stop{Slot: 0}}},
		Steady: w(90*s, 110*s), ExpectBalance: true,
	},
	{
		Name: "crash-failover", Description: "A holder crashes without releasing; survivors poll its endpoints within one lease TTL of the crash (the moment its leases expire), not at their next discovery tick.",
		Instances: 3, Endpoints: 9, Duration: 140 * s,
		// The holder of ep-0, not a slot: a system that does not spread its endpoints (the examples,
		// some peers) may leave a slot holding nothing, and a crash of it gives failover nothing to judge.
		Steps:  chaos.Schedule{{At: 60 * s, Fault: chaos.Crash{Of: "ep-0", Slot: 0, OrSlot: true}}},
		Steady: w(115*s, 140*s), ExpectBalance: true,
	},
	{
		Name: "restart-new-id", Description: "An instance restarts with a new ID; it cannot renew its old leases and must acquire them legitimately, each within one lease TTL of the restart.",
		Instances: 3, Endpoints: 9, Duration: 140 * s, Steps: chaos.Schedule{{At: 60 * s, Fault: chaos.Restart{Slot: 1}}},
		Steady: w(115*s, 140*s), ExpectBalance: true,
	},
	{
		Name: "redis-partition", Description: "A holder is cut off from Redis for longer than a TTL; it must stop polling before anyone else may start, and others poll its endpoints within one lease TTL of the cut.",
		Instances: 3, Endpoints: 9, Duration: 150 * s, Steps: chaos.Schedule{{At: 60 * s, For: 50 * s, Fault: chaos.Partition{Of: "ep-0"}}},
		Steady: w(135*s, 150*s), ExpectBalance: true,
	},
	{
		Name: "one-way-partition", Description: "A holder's requests reach Redis but its replies are lost for 70 s: its writes take effect unseen, yet its endpoints must move to others within the bound for blind writes (its writes may extend its lease until it can notice, a renewal interval and a call bound, then for a TTL: 43 s; the specification's TTL bound assumes a crash or a two-way partition).",
		Instances: 3, Endpoints: 9, Duration: 170 * s, Steps: chaos.Schedule{{At: 60 * s, For: 70 * s, Fault: chaos.Partition{Of: "ep-0", OneWay: true}}},
		Steady: w(155*s, 170*s), ExpectBalance: true,
	},
	{
		Name: "latency", Description: "Every link slows to 600 ms ± 300 ms per round trip; slow replies must never extend a belief.",
		Instances: 3, Endpoints: 9, Duration: 130 * s, Steps: chaos.Schedule{{At: 60 * s, For: 40 * s, Fault: chaos.Latency{Slot: -1, Latency: 600 * time.Millisecond, Jitter: 300 * time.Millisecond}}},
		Steady: w(115*s, 130*s),
	},
	{
		Name: "redis-outage", Description: "Redis is unreachable from every instance for 40 s; all polling stops, then resumes without a double poll.",
		Instances: 3, Endpoints: 9, Duration: 160 * s, Steps: chaos.Schedule{{At: 60 * s, For: 40 * s, Fault: chaos.Outage{}}},
		Steady: w(145*s, 160*s), ExpectBalance: true,
	},
	{
		Name: "redis-pause", Description: "Redis freezes (SIGSTOP) for 20 s and then answers everything late.",
		Instances: 3, Endpoints: 9, Duration: 140 * s, Steps: chaos.Schedule{{At: 60 * s, For: 20 * s, Fault: chaos.RedisPause{}}},
		Steady: w(125*s, 140*s), ExpectBalance: true, NeedsBackendControl: true,
	},
	{
		Name: "redis-restart-empty", Description: "Redis restarts with an empty dataset while holders are inside their deadlines; nobody may take their endpoints until those deadlines have passed, and fencing tokens keep increasing.",
		Instances: 3, Endpoints: 9, Duration: 170 * s, Steps: chaos.Schedule{{At: 60 * s, For: 2 * s, Fault: chaos.RedisRestart{}}},
		Steady: w(150*s, 170*s), ExpectBalance: true, Fencing: true, NeedsBackendControl: true,
	},
	{
		Name: "gc-pause", Description: "A holder freezes for 1.5 TTL between deciding to poll and polling, then wakes and sends its poll: fencing must refuse it.",
		Instances: 3, Endpoints: 9, Duration: 150 * s, Steps: chaos.Schedule{{At: 60 * s, For: 45 * s, Fault: chaos.Pause{Of: "ep-0"}}},
		Steady: w(135*s, 150*s), ExpectBalance: true, Fencing: true,
	},
	{
		Name: "clock-drift", Description: "Two instances' clocks drift by half the tolerated bound in opposite directions.",
		Instances: 3, Endpoints: 9, Duration: 150 * s, Steps: chaos.Schedule{
			{At: 40 * s, For: 100 * s, Fault: chaos.Drift{Slot: 0, Rate: 0.995}},
			{At: 40 * s, For: 100 * s, Fault: chaos.Drift{Slot: 1, Rate: 1.005}},
		},
		Steady: w(70*s, 140*s), ExpectBalance: true,
	},
	{
		Name: "slow-poll-longer-than-ttl", Description: "Each poll takes 1.5 TTL; renewal must carry on in the background and the poll must not be cut short while renewals succeed.",
		Instances: 3, Endpoints: 6, Duration: 150 * s, Timing: sim.Timing{PollDuration: 45 * s},
	},
	{
		Name: "sessions-change", Description: "Sessions are added, paused, resumed and removed at run time: paused and removed ones stop being polled, new ones are picked up.",
		Instances: 3, Endpoints: 6, Duration: 150 * s, Steps: chaos.Schedule{
			{At: 60 * s, Fault: chaos.SessionChange{Change: "pause", ID: "ep-1"}},
			{At: 60 * s, Fault: chaos.SessionChange{Change: "remove", ID: "ep-2"}},
			{At: 60 * s, Fault: chaos.SessionChange{Change: "add", ID: "ep-new"}},
			{At: 100 * s, Fault: chaos.SessionChange{Change: "resume", ID: "ep-1"}},
		},
		Steady: w(130*s, 150*s),
	},
	{
		Name: "random-nemesis", Description: "A random mix of faults drawn from the seed, with recovery time between them; endpoints enforce fencing.",
		Instances: 4, Endpoints: 12, Duration: 320 * s,
		Nemesis: &chaos.NemesisOptions{From: 60 * s, To: 290 * s, TTL: 30 * s},
		Steady:  w(300*s, 320*s), NeedsBackendControl: true,
		// Pauses are among the faults: only fencing at the resource can refuse a woken zombie's poll.
		Fencing: true,
	},
}

func init() { all = append(all, electionScenarios()...) }

// All returns every scenario, in catalogue order.
func All() []sim.Scenario { return append([]sim.Scenario(nil), all...) }

// Names lists the scenarios' names in catalogue order.
func Names() []string {
	names := make([]string, len(all))
	for i, sc := range all {
		names[i] = sc.Name
	}
	return names
}

// Get returns the named scenario (of the catalogue, or one of the scale scenarios no suite runs), or an
// error listing the valid names.
func Get(name string) (sim.Scenario, error) {
	for _, sc := range append(All(), scale...) {
		if sc.Name == name {
			return sc, nil
		}
	}
	return sim.Scenario{}, fmt.Errorf("unknown scenario %q; valid scenarios: %s", name, strings.Join(Names(), ", "))
}

// Suite is a named list of scenarios with a time scale.
type Suite struct {
	Name        string
	Description string
	TimeScale   float64
	// Scenarios lists the scenario names; nil means every scenario in the catalogue but those Exclude
	// names.
	Scenarios []string
	Exclude   []string
	// Parallel is how many scenarios run at once by default (each has its own Redis, proxies and
	// PostgreSQL table). A run spends nearly all its time waiting on timers and loopback round trips:
	// four at a time on two cores kept every verdict of a 630-run campaign of the ci suite (docs/cli.md).
	Parallel int
}

var suites = []Suite{
	{Name: "ci", Description: "every scenario at a tenth of spec time, of the Sentinel ones only " + ciSentinel + ", of the cluster ones only " + ciCluster, TimeScale: 0.1, Parallel: 4,
		Exclude: append(append(sentinelNotInCI(), clusterNotInCI()...), explorationNames()...)},
	{Name: "quick", Description: "a representative few at a tenth of spec time", TimeScale: 0.1, Parallel: 3,
		Scenarios: []string{"balance-3x9", "crash-failover", "redis-partition", "gc-pause", "scale-up-2-to-3"}},
	{Name: "full", Description: "every scenario at spec timing", TimeScale: 1, Parallel: 2},
	{Name: "sentinel", Description: "the Sentinel scenarios at a tenth of spec time", TimeScale: 0.1, Scenarios: sentinelNames()},
	{Name: "cluster", Description: "the Redis Cluster scenarios at a tenth of spec time", TimeScale: 0.1, Scenarios: clusterNames()},
	{Name: "soak", Description: "the random nemesis, repeated with new seeds until --duration is spent", TimeScale: 0.1, Scenarios: []string{"random-nemesis"}},
	{Name: "explore", Description: "the composing nemesis, for the lease manager and the Redis election, at a tenth of spec time (not in ci: for campaigns over many seeds)", TimeScale: 0.1, Parallel: 2,
		Scenarios: explorationNames()},
}

// Suites returns every suite.
func Suites() []Suite {
	out := make([]Suite, len(suites))
	for i, su := range suites {
		out[i] = resolved(su)
	}
	return out
}

// RunTime is how long the suite's scenarios take one after another at the suite's time scale (a soak
// runs for as long as it is told).
func (su Suite) RunTime() time.Duration {
	var total time.Duration
	for _, n := range su.Scenarios {
		if sc, err := Get(n); err == nil {
			total += sc.Duration
		}
	}
	return time.Duration(float64(total) * su.TimeScale)
}

func resolved(su Suite) Suite {
	if su.Scenarios == nil {
		for _, n := range Names() {
			if !slices.Contains(su.Exclude, n) {
				su.Scenarios = append(su.Scenarios, n)
			}
		}
	}
	return su
}

// GetSuite returns the named suite, or an error listing the valid names.
func GetSuite(name string) (Suite, error) {
	var names []string
	for _, su := range suites {
		if su.Name == name {
			return resolved(su), nil
		}
		names = append(names, su.Name)
	}
	sort.Strings(names)
	return Suite{}, fmt.Errorf("unknown suite %q; valid suites: %s", name, strings.Join(names, ", "))
}
