package simcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/simcli"
)

// campaignRecord is what the test reads of campaign.json.
type campaignRecord struct {
	Campaign struct {
		ID   string `json:"id"`
		Jobs []struct {
			Scenario string `json:"scenario"`
			Seed     int64  `json:"seed"`
			Shard    int    `json:"shard"`
		} `json:"jobs"`
	} `json:"campaign"`
	Shard       int  `json:"shard"`
	Interrupted bool `json:"interrupted"`
	Jobs        []struct {
		Job     int    `json:"job"`
		Outcome string `json:"outcome"`
		Dir     string `json:"dir"`
		Kept    bool   `json:"kept"`
	} `json:"jobs"`
}

func readCampaign(t *testing.T, dir string) campaignRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "campaign.json"))
	require.NoError(t, err)
	var c campaignRecord
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

// Two cheap scenarios on two random seeds, in two shards run one after the other as two machines
// would, then merged: every job runs once, passing runs keep only their result.json, and the merge
// lists all four.
func TestCampaignShardedAndMerged(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs four scenarios")
	}
	root := t.TempDir()
	var shards []string
	owner := map[int]int{}
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(root, "shard-"+string(rune('0'+i)))
		shards = append(shards, dir)
		code, stdout, stderr := run(t, "campaign", "single-instance", "balance-3x9", "--seeds", "2", "--campaign-seed", "7",
			"--shard", string(rune('0'+i))+"/2", "--redis", "embedded", "--parallel", "2", "--out", dir)
		require.Equal(t, simcli.ExitOK, code, stdout+stderr)
		require.Contains(t, stdout, "seeds drawn from campaign seed 7 (12328211, 587808022)")
		require.Contains(t, stdout, "shard "+string(rune('0'+i))+"/2: 2 of the 4 runs")
		require.Contains(t, stdout, "2 runs: 2 passed, 0 failed")

		c := readCampaign(t, dir)
		require.Equal(t, i, c.Shard)
		require.Len(t, c.Campaign.Jobs, 4)
		require.Len(t, c.Jobs, 2)
		for _, j := range c.Jobs {
			require.NotContains(t, owner, j.Job, "job %d ran in two shards", j.Job)
			owner[j.Job] = i
			require.Equal(t, "pass", j.Outcome)
			require.False(t, j.Kept)
			left, err := os.ReadDir(filepath.Join(dir, j.Dir))
			require.NoError(t, err)
			require.Len(t, left, 2, "a passing run keeps only its result.json and its marker")
			require.Equal(t, ".tenure.json", left[0].Name())
			require.Equal(t, "result.json", left[1].Name())
		}
		for _, f := range []string{"index.html", "junit.xml", "summary.md"} {
			require.FileExists(t, filepath.Join(dir, f))
		}
	}
	require.Len(t, owner, 4, "every job ran in some shard")

	out := filepath.Join(root, "merged")
	code, stdout, stderr := run(t, "campaign", "merge", out, shards[0], shards[1])
	require.Equal(t, simcli.ExitOK, code, stdout+stderr)
	require.Contains(t, stdout, "4 runs: 4 passed, 0 failed")
	require.Regexp(t, `single-instance\s+2\s+2\s+0`, stdout)
	require.Regexp(t, `balance-3x9\s+2\s+2\s+0`, stdout)
	index, err := os.ReadFile(filepath.Join(out, "index.html"))
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(string(index), `<tr class="run `))
	require.Contains(t, string(index), "balance-3x9 seed 587808022")
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(string(junit), "<testsuite "))
	require.Contains(t, string(junit), `name="single-instance seed 12328211"`)
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "### ✅ campaign "+readCampaign(t, shards[0]).Campaign.ID+": 4 runs: 4 passed, 0 failed")
}

// Bad arguments are refused before anything runs or is written.
func TestCampaignUsageErrors(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "mine"), nil, 0o644))
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"seeds and a range":       {[]string{"single-instance", "--seeds", "2", "--seed-range", "1-2"}, "not both"},
		"campaign seed and range": {[]string{"single-instance", "--seed-range", "1-2", "--campaign-seed", "3"}, "nothing to draw"},
		"shard without its seed":  {[]string{"single-instance", "--seeds", "2", "--shard", "1/2"}, "needs --campaign-seed"},
		"shard out of range":      {[]string{"single-instance", "--seed-range", "1-2", "--shard", "3/2"}, "names no shard"},
		"shard not i/n":           {[]string{"single-instance", "--seed-range", "1-2", "--shard", "2"}, "want i/n"},
		"backwards range":         {[]string{"single-instance", "--seed-range", "9-1"}, "runs backwards"},
		"zero seeds":              {[]string{"single-instance", "--seeds", "0"}, "at least 1"},
		"scenario twice":          {[]string{"single-instance", "single-instance", "--seed-range", "1-2"}, "named twice"},
		"unknown scenario":        {[]string{"single-instanse", "--seed-range", "1-2"}, "did you mean single-instance"},
		"scenario and suite":      {[]string{"single-instance", "--suite", "ci", "--seed-range", "1-2"}, "not both"},
		"no scenario":             {[]string{"--seed-range", "1-2"}, "name at least one scenario"},
		"a seed":                  {[]string{"single-instance", "--seed", "1"}, "unknown flag --seed for campaign: did you mean --seeds"},
		"zero parallel":           {[]string{"single-instance", "--seed-range", "1-2", "--parallel", "0"}, "--parallel must be at least 1"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"campaign", "--out", out}, tc.args...)...)
			require.Equal(t, simcli.ExitUsage, code, stdout+stderr)
			require.Contains(t, stderr, tc.want)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err), "a refused campaign writes nothing")
		})
	}
	code, _, stderr := run(t, "campaign", "single-instance", "--seed-range", "1-2", "--out", full)
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, stderr, "holds files")

	code, stdout, _ := run(t, "campaign", "--help")
	require.Equal(t, simcli.ExitOK, code)
	require.Contains(t, stdout, "simrun campaign merge OUT SHARD_DIR...")
	require.Contains(t, stdout, "--shard VALUE")
}

// Ctrl-C: the runs in progress are saved as interrupted, the rest listed as not run, the summary is
// written and says so, and the exit status is 130.
func TestCampaignInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "out")
	go func() {
		for ctx.Err() == nil {
			if st, err := os.Stat(filepath.Join(dir, "single-instance-1", "instances.log")); err == nil && st.Size() > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	code := simcli.Main(ctx, []string{"campaign", "single-instance", "--seed-range", "1-3", "--redis", "embedded", "--out", dir}, &out, &errb)
	require.Equal(t, simcli.ExitInterrupted, code, out.String()+errb.String())
	require.Contains(t, errb.String(), "simrun: interrupted")
	require.Contains(t, out.String(), "INTERRUPTED: 2 runs did not run")
	require.NotContains(t, out.String(), "FAIL")
	c := readCampaign(t, dir)
	require.True(t, c.Interrupted)
	var outcomes []string
	for _, j := range c.Jobs {
		outcomes = append(outcomes, j.Outcome)
	}
	require.Equal(t, []string{"interrupted", "not-run", "not-run"}, outcomes)
	require.FileExists(t, filepath.Join(dir, "single-instance-1", "history.jsonl"), "the partial run is kept")
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "**Interrupted**: 2 runs did not run")
}
