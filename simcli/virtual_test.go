package simcli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// simrunIn runs the built simrun in dir and returns its exit code and output.
func simrunIn(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(buildSimrun(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

func TestVirtualRefusesRealParts(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "crash-failover", "--virtual", "--redis", "server"},
		{"run", "crash-failover", "--virtual", "--toxiproxy", "http://127.0.0.1:8474"},
		{"run", "--suite", "ci", "--virtual", "--parallel", "2"},
	} {
		code, out := simrunIn(t, dir, args...)
		require.Equal(t, 2, code, out)
		require.Contains(t, out, "--virtual", out)
	}
	for scenario, says := range map[string]string{
		"sentinel-primary-kill":    "sentinel deployment",
		"redis-restart-aof":        "append-only file",
		"election-leader-crash-pg": "PostgreSQL",
	} {
		code, out := simrunIn(t, dir, "run", scenario, "--virtual", "--seed", "1")
		require.Equal(t, 2, code, out)
		require.Contains(t, out, says)
		require.Contains(t, out, "drop --virtual")
	}
	entries, _ := os.ReadDir(dir)
	require.Empty(t, entries, "a refused run left something behind")
}

// TestVirtualCampaignUsesWorkers runs a campaign in virtual time (worker processes, outside a test
// binary's bubbles), then the explorer, then a replay of a run in virtual time only.
func TestVirtualCampaignUsesWorkers(t *testing.T) {
	dir := t.TempDir()
	code, out := simrunIn(t, dir, "campaign", "crash-failover", "redis-restart-empty", "--virtual", "--seeds", "3", "--campaign-seed", "5", "--out", "c")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "6 runs: 6 passed")
	require.Contains(t, out, "--virtual")
	var m struct {
		Jobs []struct {
			Outcome string `json:"outcome"`
			Dir     string `json:"dir"`
		} `json:"jobs"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "c", "campaign.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	require.Len(t, m.Jobs, 6)
	for _, j := range m.Jobs {
		require.Equal(t, "pass", j.Outcome)
		files, err := os.ReadDir(filepath.Join(dir, "c", j.Dir))
		require.NoError(t, err)
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
		}
		require.Contains(t, names, "result.json")
		require.NotContains(t, names, "report.html", "a passing run in a virtual campaign keeps its result.json only")
	}

	code, out = simrunIn(t, dir, "explore", "--virtual", "--seeds", "4", "--explore-seed", "3", "--out", "x")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "4 runs in")
	require.Contains(t, out, "0 did not pass")

	code, out = simrunIn(t, dir, "run", "crash-failover", "--virtual", "--seed", "2", "--out", "r")
	require.Equal(t, 0, code, out)
	code, out = simrunIn(t, dir, "replay", "r", "--runs", "2", "--real-runs", "0")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "virtual re-runs alike        2 of 2")
	require.True(t, strings.Contains(out, "original (virtual)"), out)
}

// --repeat runs a scenario several times on its seed and reports its pass rate, each run in a
// directory of its own; it makes no sense for the soak suite, which draws a seed per run.
func TestRepeatReportsAPassRate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out := simrunIn(t, dir, "run", "crash-failover", "--virtual", "--seed", "3", "--repeat", "2", "--out", "r", "--quiet")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "crash-failover: 2 of 2 passed (100%)", out)
	for _, k := range []string{"1", "2"} {
		_, err := os.Stat(filepath.Join(dir, "r", "crash-failover-r"+k, "result.json"))
		require.NoError(t, err, "repeat %s has its own directory", k)
	}
	code, out = simrunIn(t, dir, "run", "crash-failover", "--virtual", "--repeat", "0")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, `--repeat "0": want a whole number of at least 1`)
	code, out = simrunIn(t, dir, "run", "--suite", "soak", "--virtual", "--repeat", "2")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "--repeat has no use with the soak suite")
}
