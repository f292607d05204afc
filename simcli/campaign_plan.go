package simcli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"
)

// campaignDef is what makes a campaign: every shard of one campaign computes the same definition from
// the same arguments, on any machine, so each selects its own jobs without talking to the others, and
// the merge can tell shards of one campaign from shards of another.
type campaignDef struct {
	// ID is a digest of everything below: equal IDs mean the same jobs, split the same way.
	ID        string   `json:"id"`
	Suite     string   `json:"suite,omitempty"`
	Scenarios []string `json:"scenarios"`
	Seeds     []int64  `json:"seeds"`
	// CampaignSeed is the seed the seeds were drawn from; nil for a seed range.
	CampaignSeed *int64  `json:"campaign_seed,omitempty"`
	SeedRange    string  `json:"seed_range,omitempty"`
	TimeScale    float64 `json:"time_scale"`
	Instances    int     `json:"instances,omitempty"`
	Endpoints    int     `json:"endpoints,omitempty"`
	Shards       int     `json:"shards"`
	// Jobs is every job of the campaign, scenario by scenario and seed by seed, with its shard.
	Jobs []plannedJob `json:"jobs"`
	// Command runs the campaign again (add --shard i/n for one shard); it is not part of the ID, since
	// it names the binary and external services, which may differ from machine to machine.
	Command string `json:"command"`
}

// plannedJob is one scenario on one seed.
type plannedJob struct {
	Scenario string `json:"scenario"`
	Seed     int64  `json:"seed"`
	System   string `json:"system"`
	// Backend is the backend it runs on, auto resolved: shards whose machines resolve it differently
	// (one without redis-server) are not one campaign.
	Backend string `json:"backend"`
	// Shard is the shard (1..Shards) that runs it.
	Shard int `json:"shard"`
}

// name is how a job is named in messages.
func (p plannedJob) name() string { return fmt.Sprintf("%s seed %d", p.Scenario, p.Seed) }

// digest computes the definition's ID.
func (d campaignDef) digest() string {
	d.ID, d.Command = "", ""
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// maxCampaignSeeds bounds --seeds and --seed-range: a mistyped count should fail at once rather than
// plan billions of runs.
const maxCampaignSeeds = 100_000

// drawSeeds draws n distinct seeds in [1, 999999999] (the range simrun run draws its own in) from the
// campaign seed. math/rand's seeded generator is frozen by the Go 1 compatibility promise, so any build
// of simrun draws the same seeds from the same campaign seed.
func drawSeeds(campaignSeed int64, n int) []int64 {
	rng := rand.New(rand.NewSource(campaignSeed))
	seen := make(map[int64]bool, n)
	out := make([]int64, 0, n)
	for len(out) < n {
		s := rng.Int63n(999_999_999) + 1
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// parseSeedRange parses --seed-range A-B: whole numbers, A ≤ B, inclusive.
func parseSeedRange(s string) (int64, int64, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	switch {
	case !ok || err1 != nil || err2 != nil || lo < 0:
		return 0, 0, fmt.Errorf("want FIRST-LAST, two whole numbers such as 1-10, got %q", s)
	case hi < lo:
		return 0, 0, fmt.Errorf("%d-%d runs backwards: give the lower seed first (%d-%d)", lo, hi, hi, lo)
	case hi-lo >= maxCampaignSeeds:
		return 0, 0, fmt.Errorf("%d seeds is more than %d: split the range into several campaigns", hi-lo+1, maxCampaignSeeds)
	}
	return lo, hi, nil
}

// parseShard parses --shard i/n: shard i of n, 1 ≤ i ≤ n.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("want i/n, such as 1/2 for the first of two shards, got %q", s)
	case n < 1 || i < 1 || i > n:
		return 0, 0, fmt.Errorf("%d/%d names no shard: shards are numbered 1 to n (1/%d .. %d/%d)", i, n, max(n, 1), max(n, 1), max(n, 1))
	}
	return i, n, nil
}

// shardEnv is where --shard auto looks for the shard of the CI job it runs in, first match first: each
// source's name (for messages), its index and count variables, and whether its index counts from 0.
var shardEnv = []struct {
	name, index, total string
	fromZero           bool
}{
	{"TENURE_SHARD_INDEX/TENURE_SHARD_TOTAL", "TENURE_SHARD_INDEX", "TENURE_SHARD_TOTAL", true}, // any CI; the GitHub Actions workflow maps strategy.job-index/job-total to them
	{"GitLab CI parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", false},                             // parallel: N
	{"a Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", "TENURE_SHARD_TOTAL", true},            // the manifest sets the total to .spec.completions
	{"CircleCI parallelism", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", true},                    // parallelism: N
	{"Buildkite parallelism", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", true},   // parallelism: N
}

// shardFromEnv resolves --shard auto from the environment (getenv): TENURE_SHARD=i/n as given, else
// the first source of shardEnv whose index variable is set. It returns the shard (1-based), the count
// and where it found them.
func shardFromEnv(getenv func(string) string) (int, int, string, error) {
	if s := getenv("TENURE_SHARD"); s != "" {
		i, n, err := parseShard(s)
		if err != nil {
			return 0, 0, "", fmt.Errorf("TENURE_SHARD: %v", err)
		}
		return i, n, "TENURE_SHARD", nil
	}
	for _, src := range shardEnv {
		idx := getenv(src.index)
		if idx == "" {
			continue
		}
		tot := getenv(src.total)
		if tot == "" {
			return 0, 0, "", fmt.Errorf("%s is set (%s=%s) but %s is not: set it to the number of shards", src.name, src.index, idx, src.total)
		}
		i, err1 := strconv.Atoi(idx)
		n, err2 := strconv.Atoi(tot)
		if err1 != nil || err2 != nil {
			return 0, 0, "", fmt.Errorf("%s: want whole numbers, got %s=%q, %s=%q", src.name, src.index, idx, src.total, tot)
		}
		if src.fromZero {
			i++
		}
		if n < 1 || i < 1 || i > n {
			return 0, 0, "", fmt.Errorf("%s: %s=%s of %s=%s names no shard", src.name, src.index, idx, src.total, tot)
		}
		return i, n, fmt.Sprintf("%s (%s=%s, %s=%s)", src.name, src.index, idx, src.total, tot), nil
	}
	return 0, 0, "", errors.New("no shard in the environment: set TENURE_SHARD=i/n, or TENURE_SHARD_INDEX (from 0) and TENURE_SHARD_TOTAL, " +
		"or run as a job of GitLab's parallel (CI_NODE_INDEX), a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with TENURE_SHARD_TOTAL), " +
		"CircleCI or Buildkite parallelism (docs/ci/)")
}

// assignShards splits jobs of the given expected run times into n shards, returning each job's shard
// (1..n). Longest first, each to the shard with the least work so far (the lowest-numbered on a tie):
// the shards' expected times then differ by at most the longest job. Equal times deal the jobs out in
// turn; so does any unknown (non-positive) time, which leaves nothing to balance by. The result depends
// only on the jobs' order and times, so every machine computes the same split.
func assignShards(costs []time.Duration, n int) []int {
	shard := make([]int, len(costs))
	if slices.ContainsFunc(costs, func(c time.Duration) bool { return c <= 0 }) {
		for i := range shard {
			shard[i] = i%n + 1
		}
		return shard
	}
	order := make([]int, len(costs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return -compareDur(costs[a], costs[b]) })
	load := make([]time.Duration, n)
	for _, j := range order {
		least := 0
		for s := 1; s < n; s++ {
			if load[s] < load[least] {
				least = s
			}
		}
		shard[j] = least + 1
		load[least] += costs[j]
	}
	return shard
}

func compareDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jobsOfShard lists the indices of def.Jobs that shard i runs, in job order.
func (d campaignDef) jobsOfShard(i int) []int {
	var out []int
	for k, j := range d.Jobs {
		if j.Shard == i {
			out = append(out, k)
		}
	}
	return out
}

// again is the command that runs shard i again (every shard, for i 0).
func (d campaignDef) again(i int) string {
	switch {
	case d.Shards == 1:
		return d.Command
	case i > 0:
		return fmt.Sprintf("%s --shard %d/%d", d.Command, i, d.Shards)
	}
	return fmt.Sprintf("%s --shard i/%d, for i = 1 to %d", d.Command, d.Shards, d.Shards)
}

// seedsText lists seeds for a person: all of a few, the first ones of many.
func seedsText(seeds []int64) string {
	const shown = 12
	var parts []string
	for i, s := range seeds {
		if i == shown {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(seeds)))
			break
		}
		parts = append(parts, strconv.FormatInt(s, 10))
	}
	return strings.Join(parts, ", ")
}

// seedSource says where a campaign's seeds came from.
func (d campaignDef) seedSource() string {
	if d.CampaignSeed != nil {
		return fmt.Sprintf("%s drawn from campaign seed %d", plural(len(d.Seeds), "random seed"), *d.CampaignSeed)
	}
	return "seeds " + d.SeedRange
}
