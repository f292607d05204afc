package simcli

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
)

// fakeShard writes the directory that shard i of 2 of the campaign given by args would leave, without running
// anything: each job's run is a saved history judged again, the naive design's (a failure) for the jobs
// failing names outFail, the reference's on a starved machine (inconclusive, lateHistory) for those it
// names outInconclusive, the reference's (a pass, pruned) for the others. Jobs at or after stopAt did not
// run.
func fakeShard(t *testing.T, dir string, shard int, stopAt int, failing map[string]outcome, args ...string) campaignManifest {
	t.Helper()
	f, def, jobs := planArgs(t, append(args, "--shard", fmt.Sprintf("%d/2", shard))...)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	m := campaignManifest{Campaign: def, Shard: f.shard, Started: time.Now(), Wall: time.Minute}
	for n, k := range def.jobsOfShard(shard) {
		j := jobs[k]
		rec := jobRecord{Job: k, Scenario: j.opts.Scenario.Name, Seed: j.opts.Seed, Outcome: outNotRun, Replay: j.opts.Command}
		if n < stopAt {
			runDir := runDir(dir, rec.Scenario, rec.Seed)
			switch failing[plannedJob{Scenario: rec.Scenario, Seed: rec.Seed}.name()] {
			case outFail:
				judgedRun(t, "naive-redis-partition", runDir)
			case outInconclusive:
				judgedHistory(t, lateHistory(t, true), runDir)
			default:
				judgedRun(t, "reference-redis-partition", runDir)
			}
			rec = finishRecord(t.Context(), rec, summaryRow{}, nil, runDir, dir, false)
		} else {
			m.Interrupted = true
		}
		m.Jobs = append(m.Jobs, rec)
	}
	v := campaignView{def: def, shard: shard, records: m.Jobs, interrupted: m.Interrupted,
		shards: []mergedShard{{Shard: shard, Dir: ".", Wall: m.Wall}}}
	require.NoError(t, writeCampaignOutputs(dir, m, v))
	return m
}

var mergeArgs = []string{"single-instance", "balance-3x9", "--seed-range", "1-3", "--redis", "embedded"}

func merge(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	var out bytes.Buffer
	code, err := campaignMergeCmd(args, &out)
	return code, out.String(), err
}

// Merging the shards of one campaign gives one index, one JUnit file and one summary over every job,
// with links into the shards' directories.
func TestCampaignMerge(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s1, s2 := filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")
	failing := map[string]outcome{"balance-3x9 seed 2": outFail}
	m1 := fakeShard(t, s1, 1, 99, failing, mergeArgs...)
	m2 := fakeShard(t, s2, 2, 99, failing, mergeArgs...)
	require.Len(t, append(m1.Jobs, m2.Jobs...), 6)

	out := filepath.Join(root, "merged")
	code, stdout, err := merge(t, out, s2, s1) // in any order
	require.NoError(t, err)
	require.Equal(t, ExitViolated, code, stdout)
	require.Contains(t, stdout, "6 runs: 5 passed, 1 failed")
	require.Contains(t, stdout, "balance-3x9 seed 2: single-holder violated, stale-belief violated, single-poller violated")
	require.Regexp(t, `report: `+regexp.QuoteMeta(root)+`/shard-[12]/balance-3x9-2/report.html`, stdout) // in its shard

	m, err := readManifest(out)
	require.NoError(t, err)
	require.Equal(t, 0, m.Shard)
	require.Len(t, m.Jobs, 6)
	for k, r := range m.Jobs {
		require.Equal(t, k, r.Job, "merged records are in job order")
		require.FileExists(t, filepath.Join(out, r.Dir, reports.FileResult))
	}
	require.Equal(t, []string{"../shard-1", "../shard-2"}, []string{m.Merged[0].Dir, m.Merged[1].Dir})

	index, err := os.ReadFile(filepath.Join(out, reports.FileIndex))
	require.NoError(t, err)
	hrefs := regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(string(index), -1)
	require.NotEmpty(t, hrefs)
	reportLinks := 0
	for _, h := range hrefs {
		require.FileExists(t, filepath.Join(out, filepath.FromSlash(h[1])), "the index links %s", h[1])
		if strings.HasSuffix(h[1], reports.FileReport) {
			reportLinks++
		}
	}
	require.Equal(t, 1, reportLinks, "only the failing run keeps a report")
	require.Regexp(t, `href="../shard-[12]/balance-3x9-2/report.html"`, string(index))

	var junit struct {
		Suites []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
		Failures int `xml:"failures,attr"`
	}
	b, err := os.ReadFile(filepath.Join(out, reports.FileJUnit))
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(b, &junit))
	require.Len(t, junit.Suites, 6)
	require.Positive(t, junit.Failures)
	md, err := os.ReadFile(filepath.Join(out, reports.FileSummary))
	require.NoError(t, err)
	require.Contains(t, string(md), "| single-poller violated | 1 | balance-3x9: 2 |")
}

// The merge refuses what is not the complete set of one campaign's shards, and says what is wrong.
func TestCampaignMergeRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s1, s2 := filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")
	fakeShard(t, s1, 1, 99, nil, mergeArgs...)
	fakeShard(t, s2, 2, 99, nil, mergeArgs...)
	other := filepath.Join(root, "other")
	fakeShard(t, other, 2, 99, nil, "single-instance", "balance-3x9", "--seed-range", "1-4", "--redis", "embedded")
	merged := filepath.Join(root, "merged")
	_, _, err := merge(t, merged, s1, s2)
	require.NoError(t, err)
	edited := filepath.Join(root, "edited")
	m := fakeShard(t, edited, 2, 99, nil, mergeArgs...)
	m.Jobs = m.Jobs[1:]
	require.NoError(t, writeManifest(edited, m))
	beyond := filepath.Join(root, "beyond")
	m = fakeShard(t, beyond, 2, 99, nil, mergeArgs...)
	m.Shard = 3
	require.NoError(t, writeManifest(beyond, m))
	full := filepath.Join(root, "full")
	require.NoError(t, os.MkdirAll(full, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))

	fresh := func() string { return filepath.Join(t.TempDir(), "out") }
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"missing shard":        {[]string{fresh(), s1}, []string{"shard 2/2 of campaign", "is missing", "3 jobs", "balance-3x9 seed", "--shard 2/2"}},
		"duplicate shard":      {[]string{fresh(), s1, s1, s2}, []string{"shard 1/2 is given twice"}},
		"other campaign":       {[]string{fresh(), s1, other}, []string{"shards of different campaigns", "seeds (seeds 1-3: 1, 2, 3 vs seeds 1-4: 1, 2, 3, 4)"}},
		"a merge as a shard":   {[]string{fresh(), merged}, []string{"is a merge of shards, not a shard"}},
		"not a campaign":       {[]string{fresh(), t.TempDir()}, []string{"has no campaign.json"}},
		"edited":               {[]string{fresh(), s1, edited}, []string{"does not record the jobs of shard 2/2"}},
		"out holds files":      {[]string{full, s1, s2}, []string{"holds files"}},
		"out is a shard":       {[]string{s1, s1, s2}, []string{"already holds files"}},
		"no shard":             {[]string{fresh()}, []string{"simrun campaign merge OUT SHARD_DIR..."}},
		"a flag":               {[]string{"--out", fresh(), s1}, []string{"merge takes no flags"}},
		"out named as a shard": {[]string{filepath.Join(root, "nope"), filepath.Join(root, "nope")}, []string{"is both OUT and a shard"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, err := merge(t, tc.args...)
			require.Equal(t, ExitUsage, code)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			if o := tc.args[0]; o != full && o != s1 {
				_, statErr := os.Stat(o)
				require.True(t, os.IsNotExist(statErr), "a refused merge writes nothing")
			}
		})
	}
}

// A shard that was interrupted merges, but the merge says which runs did not run and does not pass.
func TestCampaignMergeOfAnInterruptedShard(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s1, s2 := filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")
	fakeShard(t, s1, 1, 99, nil, mergeArgs...)
	fakeShard(t, s2, 2, 1, nil, mergeArgs...) // ran one job of three
	out := filepath.Join(root, "merged")
	code, stdout, err := merge(t, out, s1, s2)
	require.NoError(t, err)
	require.Equal(t, ExitViolated, code)
	require.Contains(t, stdout, "6 runs: 4 passed, 0 failed, 2 not run")
	require.Contains(t, stdout, "INTERRUPTED: 2 runs did not run")
	md, err := os.ReadFile(filepath.Join(out, reports.FileSummary))
	require.NoError(t, err)
	require.Contains(t, string(md), "**Interrupted**")
}

// lateHistory is the reference's saved redis-partition run with its slowest takeover moved 60 ms past
// its deadline (the taker's polls of that endpoint shifted later), and, with lag, the harness's canary
// 40 ms late in every window of the run, as on a starved machine: four hand-offs of 40 ms account for
// 60 ms, and the run is inconclusive; without lag it fails.
func lateHistory(t *testing.T, lag bool) history.History {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("testdata", "reference-redis-partition", "history.jsonl"))
	require.NoError(t, err)
	var slowest *checker.Failover
	fos := checker.Check(h, checker.DefaultOptions()).Failovers
	for i, fo := range fos {
		if fo.To != "" && (slowest == nil || fo.Latency > slowest.Latency) {
			slowest = &fos[i]
		}
	}
	require.NotNil(t, slowest, "the saved run measured a takeover")
	by := slowest.MeasuredFrom + slowest.Bound + 60*time.Millisecond - slowest.PolledAt
	for i := range h.Events {
		e := &h.Events[i]
		if e.Kind == history.KindPoll && e.Instance == slowest.To && e.Endpoint == slowest.Endpoint && e.At >= slowest.PolledAt {
			e.At, e.End = e.At+by, e.End+by
		}
	}
	history.Sort(h.Events)
	if lag {
		l := &history.Lag{Window: 100 * time.Millisecond, Floor: 10 * time.Millisecond}
		for at := time.Duration(0); at < h.Meta.Duration; at += l.Window {
			l.Samples = append(l.Samples, history.LagSample{At: at, Canary: 40 * time.Millisecond})
			l.Windows++
		}
		l.Canary = history.LagSummary{Max: 40 * time.Millisecond, P99: 40 * time.Millisecond}
		h.Meta.Lag = l
	}
	return h
}

// An inconclusive run is counted on its own everywhere a campaign counts runs: never among the passed
// nor the failed, in a shard's summary and in the merge's summary, index and JUnit file alike, and the
// headline of each says what the exit status says.
func TestCampaignMergeCountsInconclusiveRunsApart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s1, s2 := filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")
	late := map[string]outcome{"balance-3x9 seed 2": outInconclusive}
	m1 := fakeShard(t, s1, 1, 99, late, mergeArgs...)
	m2 := fakeShard(t, s2, 2, 99, late, mergeArgs...)
	var inShard string
	for _, m := range []campaignManifest{m1, m2} {
		for _, r := range m.Jobs {
			if r.Outcome == outInconclusive {
				inShard = map[int]string{1: s1, 2: s2}[m.Shard]
				require.True(t, r.Kept, "an inconclusive run keeps its reports, as a failure does")
				require.Equal(t, []string{"failover inconclusive"}, r.Causes)
			}
		}
	}
	require.NotEmpty(t, inShard, "one run is inconclusive")
	md, err := os.ReadFile(filepath.Join(inShard, reports.FileSummary))
	require.NoError(t, err)
	require.Regexp(t, `^### ⏳ campaign \S+, shard [12]/2: 3 runs: 2 passed, 0 failed, 1 inconclusive\n`, string(md))

	out := filepath.Join(root, "merged")
	code, stdout, err := merge(t, out, s1, s2)
	require.NoError(t, err)
	require.Equal(t, ExitInconclusive, code, stdout)
	require.Contains(t, stdout, "6 runs: 5 passed, 0 failed, 1 inconclusive")
	require.Contains(t, stdout, "balance-3x9 seed 2: failover inconclusive")

	md, err = os.ReadFile(filepath.Join(out, reports.FileSummary))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(md), "### ⏳ campaign "), string(md))
	require.Contains(t, string(md), ": 6 runs: 5 passed, 0 failed, 1 inconclusive\n")
	require.Contains(t, string(md), "| balance-3x9 | 3 | 2 | 0 | 1 | 2 |")

	index, err := os.ReadFile(filepath.Join(out, reports.FileIndex))
	require.NoError(t, err)
	require.Contains(t, string(index), `id="verdict">INCONCLUSIVE</span>`)
	require.Contains(t, string(index), "5 of 6 runs passed, 1 inconclusive")

	var junit struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	b, err := os.ReadFile(filepath.Join(out, reports.FileJUnit))
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(b, &junit))
	require.Zero(t, junit.Failures, "an inconclusive run is no failure")
	require.Zero(t, junit.Errors)
	require.Positive(t, junit.Skipped, "it is evidence neither way: skipped")
	require.Contains(t, string(b), `<property name="inconclusive" value="true">`)
}
