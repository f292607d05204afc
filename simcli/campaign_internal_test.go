package simcli

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
)

// planArgs plans a campaign from its command line, as campaignCmd does.
func planArgs(t *testing.T, args ...string) (campaignFlags, campaignDef, []job) {
	t.Helper()
	var f campaignFlags
	fs := flag.NewFlagSet("campaign", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	names, err := parseInterleaved(fs, args)
	require.NoError(t, err)
	f.run.visit(fs)
	def, jobs, err := planCampaign(&f, names)
	require.NoError(t, err)
	return f, def, jobs
}

// Every job of a campaign is in exactly one shard, the same one whichever shard plans it, and the
// shards' expected run times differ by at most the longest job.
func TestCampaignShardsCoverEveryJobOnce(t *testing.T) {
	t.Parallel()
	base := []string{"--suite", "ci", "--seeds", "3", "--campaign-seed", "11", "--redis", "server"}
	for _, n := range []int{1, 2, 3, 7} {
		var first campaignDef
		owner := map[int]int{}
		for i := 1; i <= n; i++ {
			args := base
			if n > 1 {
				args = append(slices.Clone(base), "--shard", fmt.Sprintf("%d/%d", i, n))
			}
			_, def, jobs := planArgs(t, args...)
			require.Len(t, jobs, len(def.Jobs))
			if i == 1 {
				first = def
			}
			require.Equal(t, first.ID, def.ID, "shard %d/%d plans another campaign", i, n)
			require.Equal(t, first.Jobs, def.Jobs)
			for _, k := range def.jobsOfShard(i) {
				prev, dup := owner[k]
				require.False(t, dup, "job %d is in shards %d and %d", k, prev, i)
				owner[k] = i
			}
		}
		require.Len(t, owner, len(first.Jobs), "every job is in some shard of %d", n)
		require.Len(t, first.Jobs, 3*len(first.Scenarios))

		// Balanced by expected run time.
		_, _, jobs := planArgs(t, base...)
		load := make([]time.Duration, n)
		var longest time.Duration
		for k, j := range jobs {
			c := time.Duration(float64(j.opts.Scenario.Duration) * j.opts.TimeScale)
			load[owner[k]-1] += c
			longest = max(longest, c)
		}
		require.LessOrEqual(t, slices.Max(load)-slices.Min(load), longest, "loads %v", load)
	}
}

// Jobs come scenario by scenario, seed by seed; the same arguments give the same campaign on any
// machine, and any difference in them gives another.
func TestCampaignPlanIsDeterministic(t *testing.T) {
	t.Parallel()
	_, a, jobs := planArgs(t, "single-instance", "crash-failover", "--seeds", "3", "--campaign-seed", "7", "--redis", "embedded")
	_, b, _ := planArgs(t, "single-instance", "crash-failover", "--seeds", "3", "--campaign-seed", "7", "--redis", "embedded")
	require.Equal(t, a, b)
	require.Equal(t, []string{"single-instance", "crash-failover"}, a.Scenarios)
	require.Len(t, jobs, 6)
	for k, j := range jobs {
		require.Equal(t, a.Scenarios[k/3], j.opts.Scenario.Name)
		require.Equal(t, a.Seeds[k%3], j.opts.Seed)
		require.Contains(t, j.opts.Command, "run "+j.opts.Scenario.Name+" --seed "+strconv.FormatInt(j.opts.Seed, 10))
	}
	// The seeds drawn from a campaign seed are part of the campaign's contract: shards on machines
	// with other builds of simrun must draw the same ones.
	require.Equal(t, []int64{12328211, 587808022, 340881281}, a.Seeds)

	for _, other := range [][]string{
		{"single-instance", "crash-failover", "--seeds", "3", "--campaign-seed", "8", "--redis", "embedded"},
		{"single-instance", "crash-failover", "--seeds", "4", "--campaign-seed", "7", "--redis", "embedded"},
		{"crash-failover", "single-instance", "--seeds", "3", "--campaign-seed", "7", "--redis", "embedded"},
		{"single-instance", "crash-failover", "--seeds", "3", "--campaign-seed", "7", "--redis", "server"},
		{"single-instance", "crash-failover", "--seeds", "3", "--campaign-seed", "7", "--redis", "embedded", "--time-scale", "0.2"},
		{"single-instance", "crash-failover", "--seeds", "3", "--campaign-seed", "7", "--redis", "embedded", "--shard", "1/2"},
	} {
		_, c, _ := planArgs(t, other...)
		require.NotEqual(t, a.ID, c.ID, "%v", other)
		require.NotEmpty(t, diffDefs(a, c))
	}

	_, r, jobs := planArgs(t, "single-instance", "--seed-range", "5-8", "--redis", "embedded")
	require.Equal(t, []int64{5, 6, 7, 8}, r.Seeds)
	require.Nil(t, r.CampaignSeed)
	require.Len(t, jobs, 4)
	require.Contains(t, r.Command, "--seed-range 5-8")
}

// Equal run times, or unknown ones, deal the jobs out in turn; known ones balance the shards.
func TestAssignShards(t *testing.T) {
	t.Parallel()
	s := time.Second
	require.Equal(t, []int{1, 2, 3, 1, 2, 3, 1}, assignShards([]time.Duration{s, s, s, s, s, s, s}, 3))
	require.Equal(t, []int{1, 2, 1, 2}, assignShards([]time.Duration{9 * s, 0, s, s}, 2), "an unknown time: in turn")
	require.Equal(t, []int{1, 2, 2, 2}, assignShards([]time.Duration{9 * s, 3 * s, 3 * s, 3 * s}, 2))
	require.Equal(t, []int{1, 1}, assignShards([]time.Duration{s, s}, 1))
	require.Equal(t, []int{1, 2}, assignShards([]time.Duration{s, s}, 3), "more shards than jobs leaves some empty")

	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		costs := make([]time.Duration, 1+rng.Intn(80))
		for i := range costs {
			costs[i] = time.Duration(1+rng.Intn(300)) * 100 * time.Millisecond
		}
		n := 1 + rng.Intn(6)
		got := assignShards(costs, n)
		require.Equal(t, got, assignShards(costs, n))
		load := make([]time.Duration, n)
		for i, sh := range got {
			require.True(t, sh >= 1 && sh <= n)
			load[sh-1] += costs[i]
		}
		require.LessOrEqual(t, slices.Max(load)-slices.Min(load), slices.Max(costs))
	}
}

func TestParseShardAndSeedRange(t *testing.T) {
	t.Parallel()
	i, n, err := parseShard("2/3")
	require.NoError(t, err)
	require.Equal(t, [2]int{2, 3}, [2]int{i, n})
	for _, bad := range []string{"0/2", "3/2", "1/0", "a/b", "2", "-1/2"} {
		_, _, err := parseShard(bad)
		require.Error(t, err, bad)
	}
	lo, hi, err := parseSeedRange("0-9")
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 9}, [2]int64{lo, hi})
	for bad, want := range map[string]string{"9-1": "backwards", "1": "FIRST-LAST", "x-2": "FIRST-LAST", "1-200000": "more than"} {
		_, _, err := parseSeedRange(bad)
		require.ErrorContains(t, err, want, bad)
	}
	seeds := drawSeeds(3, 1000)
	require.Equal(t, seeds, drawSeeds(3, 1000))
	seen := map[int64]bool{}
	for _, s := range seeds {
		require.False(t, seen[s])
		require.True(t, s >= 1 && s <= 999_999_999)
		seen[s] = true
	}
}

// The summary counts runs per scenario and per cause, shows a column for an outcome only when some
// run had it, and lists every run that did not pass with its seed, causes and replay line.
func TestCampaignSummaryGroups(t *testing.T) {
	t.Parallel()
	def := campaignDef{ID: "abc", Scenarios: []string{"crash-failover", "gc-pause"}, Seeds: []int64{1, 2, 3}, Shards: 2,
		TimeScale: 0.1, SeedRange: "1-3", Command: "simrun campaign crash-failover gc-pause --seed-range 1-3"}
	rec := func(sc string, seed int64, o outcome, causes ...string) jobRecord {
		r := jobRecord{Scenario: sc, Seed: seed, Outcome: o, Causes: causes, Replay: "simrun run " + sc + " --seed " + strconv.FormatInt(seed, 10)}
		if o == outFail {
			r.Dir, r.Kept = sc+"-"+strconv.FormatInt(seed, 10), true
		}
		return r
	}
	v := campaignView{def: def, records: []jobRecord{
		rec("crash-failover", 1, outPass),
		rec("crash-failover", 2, outFail, "failover violated", "liveness violated"),
		rec("crash-failover", 3, outFail, "failover violated"),
		rec("gc-pause", 1, outFail, "assumptions unknown: fault failed (pause)"),
		rec("gc-pause", 2, outPass),
		rec("gc-pause", 3, outPass),
	}, shards: []mergedShard{{Shard: 1, Wall: 90 * time.Second}, {Shard: 2, Wall: 75 * time.Second}}}

	require.Equal(t, []outcome{outPass, outFail}, v.columns(), "no column for outcomes nobody had")
	sc := v.byScenario()
	require.Len(t, sc, 2)
	require.Equal(t, scenarioTally{scenario: "crash-failover", runs: 3, counts: map[outcome]int{outPass: 1, outFail: 2}, bad: []int64{2, 3}}, sc[0])
	require.Equal(t, []int64{1}, sc[1].bad)
	causes := v.byCause()
	var names []string
	for _, c := range causes {
		names = append(names, c.cause)
	}
	require.Equal(t, []string{"failover violated", "assumptions unknown: fault failed (pause)", "liveness violated"}, names,
		"most frequent first, then by name")
	require.Equal(t, "crash-failover: 2, 3", seedsByScenario(causes[0].runs))

	var text bytes.Buffer
	v.printText(&text, "out")
	for _, want := range []string{
		"failover violated", "crash-failover: 2, 3", "crash-failover seed 2: failover violated, liveness violated",
		"report: out/crash-failover-2/report.html", "replay: simrun run crash-failover --seed 2",
		"6 runs: 3 passed, 3 failed", "wall time 1m30s, the longest shard's (shard 1 1m30s, shard 2 1m15s)",
	} {
		require.Contains(t, text.String(), want)
	}
	var md bytes.Buffer
	require.NoError(t, v.markdown(&md))
	require.Contains(t, md.String(), "### ❌ campaign abc: 6 runs: 3 passed, 3 failed")
	require.Contains(t, md.String(), "| crash-failover | 3 | 1 | 2 | 2, 3 |")
	require.Contains(t, md.String(), "| failover violated | 2 | crash-failover: 2, 3 |")
	require.Contains(t, md.String(), "([report](crash-failover-2/report.html))")
	require.Contains(t, md.String(), "--shard i/2, for i = 1 to 2")

	// A third outcome, and runs that could not be set up or never ran, get columns of their own.
	v.records = append(v.records, rec("gc-pause", 4, outInconclusive, "harness lag"),
		jobRecord{Scenario: "gc-pause", Seed: 5, Outcome: outError, Error: "no redis-server"},
		jobRecord{Scenario: "gc-pause", Seed: 6, Outcome: outNotRun})
	v.interrupted = true
	require.Equal(t, []outcome{outPass, outFail, outInconclusive, outError, outNotRun}, v.columns())
	sc = v.byScenario()
	require.Equal(t, []int64{1, 4, 5}, sc[1].bad, "failed, inconclusive and not set up are listed; not run is only counted")
	text.Reset()
	v.printText(&text, "out")
	require.Contains(t, text.String(), "9 runs: 3 passed, 3 failed, 1 inconclusive, 1 not set up, 1 not run")
	require.Contains(t, text.String(), "could not be set up: no redis-server")
	require.Contains(t, text.String(), "INTERRUPTED: 1 run did not run")
	md.Reset()
	require.NoError(t, v.markdown(&md))
	require.Contains(t, md.String(), "### ⏹️ campaign abc")
	require.Contains(t, md.String(), "| harness lag | 1 | gc-pause: 4 |")

	code, err := campaignExit(v)
	require.Equal(t, ExitUsage, code, "a run that could not be set up is a setup error")
	require.ErrorContains(t, err, "1 of 9 runs could not be set up")
	v.records = v.records[:6]
	code, err = campaignExit(v)
	require.Equal(t, ExitViolated, code)
	require.NoError(t, err)
	v.records = []jobRecord{rec("gc-pause", 2, outPass), rec("gc-pause", 4, outInconclusive, "failover inconclusive")}
	code, _ = campaignExit(v)
	require.Equal(t, ExitInconclusive, code, "nothing failed, but not everything could be judged")
	v.records = []jobRecord{rec("gc-pause", 2, outPass)}
	code, _ = campaignExit(v)
	require.Equal(t, ExitOK, code)
}

// judgedRun writes a saved history's reports into dir, as a campaign's run leaves them.
func judgedRun(t *testing.T, testdata, dir string) reports.RunResult {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("testdata", testdata, "history.jsonl"))
	require.NoError(t, err)
	return judgedHistory(t, h, dir)
}

func judgedHistory(t *testing.T, h history.History, dir string) reports.RunResult {
	t.Helper()
	_, _, err := judge(dir, h, false)
	require.NoError(t, err)
	res, err := reports.ReadResult(dir)
	require.NoError(t, err)
	return res
}

// A failing run keeps its directory and its causes; a passing one keeps only its result.json (and its
// marker).
func TestFinishRecordKeepsFailuresAndPrunesPasses(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ctx := t.Context()

	failDir := filepath.Join(base, "naive")
	judgedRun(t, "naive-redis-partition", failDir)
	rec := finishRecord(ctx, jobRecord{Replay: "replay me"}, summaryRow{}, nil, failDir, base, false)
	require.Equal(t, outFail, rec.Outcome)
	require.True(t, rec.Kept)
	require.Equal(t, "naive", rec.Dir)
	require.Contains(t, rec.Causes, "single-poller violated")
	require.FileExists(t, filepath.Join(failDir, "report.html"))
	require.FileExists(t, filepath.Join(failDir, "history.jsonl"))

	passDir := filepath.Join(base, "reference")
	judgedRun(t, "reference-redis-partition", passDir)
	rec = finishRecord(ctx, jobRecord{}, summaryRow{}, nil, passDir, base, false)
	require.Equal(t, outPass, rec.Outcome)
	require.False(t, rec.Kept)
	require.Empty(t, rec.Causes)
	left, err := os.ReadDir(passDir)
	require.NoError(t, err)
	require.Len(t, left, 2)
	require.Equal(t, reports.FileMarker, left[0].Name())
	require.Equal(t, reports.FileResult, left[1].Name())

	keptDir := filepath.Join(base, "kept")
	judgedRun(t, "reference-redis-partition", keptDir)
	rec = finishRecord(ctx, jobRecord{}, summaryRow{}, nil, keptDir, base, true)
	require.True(t, rec.Kept)
	require.FileExists(t, filepath.Join(keptDir, "report.html"))

	rec = finishRecord(ctx, jobRecord{}, summaryRow{}, os.ErrNotExist, filepath.Join(base, "gone"), base, false)
	require.Equal(t, outError, rec.Outcome)
	require.Empty(t, rec.Dir)
}

// A fault that failed makes the assumptions undecided; its cause names the fault and nothing that
// changes from seed to seed, so runs failing that way group together.
func TestAssumptionsCauseFromTheChecker(t *testing.T) {
	t.Parallel()
	h, err := history.ReadFile(filepath.Join("testdata", "reference-redis-partition", "history.jsonl"))
	require.NoError(t, err)
	failed := false
	for i := range h.Events {
		if e := &h.Events[i]; e.Fault != nil && !failed {
			e.Fault.Err = "toxiproxy: connection refused at 12:00:01.5; retried"
			failed = true
		}
	}
	require.True(t, failed, "the history has a fault")
	res := judgedHistory(t, h, t.TempDir())
	require.False(t, res.Passed)
	require.Contains(t, causesOf(res), "assumptions unknown: fault failed (partition)")

	require.Equal(t, "assumptions unknown: fault failed (crash, pause)",
		assumptionsCause("the run did not go as scheduled, so a pass would mean nothing: f3 pause: x; f1 crash: y; z; f4 crash: w; assumptions: drift bound 0.025"))
	require.Equal(t, "assumptions unknown: beyond the stated assumptions (clock-drift)",
		assumptionsCause("the run went beyond the system's stated assumptions without declaring it, so a pass would mean nothing: f2 clock-drift: clock rate 1.1 errs"))
	require.Equal(t, "assumptions unknown", assumptionsCause("something new"))
}
