package simcli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/simcli"
)

func TestBenchNeedsAScenarioName(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := run(t, "bench")
	require.Equal(t, simcli.ExitUsage, code)
	require.Empty(t, stdout)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.Contains(t, stderr, "name at least one scenario")
	require.Contains(t, stderr, "simrun list")
}

func TestBenchRefusesFlagsItDoesNotHonour(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"--suite", "ci"}, {"--parallel", "2"}, {"--quiet"}, {"--duration", "1m"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"bench", "crash-failover", "--out", out}, args...)...)
			require.Equal(t, simcli.ExitUsage, code, stderr)
			require.Contains(t, stderr, args[0]+" does not apply to bench")
			require.Contains(t, stderr, "--runs")
		})
	}
	code, _, stderr := run(t, "bench", "crash-failover", "--runs", "0", "--out", out)
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, stderr, "at least 1")
	code, _, stderr = run(t, "bench", "crash-failover", "crash-failover", "--out", out)
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, stderr, "named twice")
	code, _, stderr = run(t, "bench", "crash-failover", "--bogus", "--out", out)
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, stderr, "unknown flag --bogus")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "a refused bench must leave nothing behind")
}

func TestBenchHelpListsOnlyItsFlags(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := run(t, "bench", "--help")
	require.Equal(t, simcli.ExitOK, code, stderr)
	for _, f := range []string{"-runs", "-seed", "-keep", "-json", "-redis", "-system", "-time-scale", "-out"} {
		require.Contains(t, stdout, "  -"+f, f)
	}
	for _, f := range []string{"-suite", "-parallel", "-quiet", "-duration"} {
		require.NotContains(t, stdout, "-"+f, f)
	}
}

// A passing bench prints the figure columns and deletes the directories of its runs.
func TestBenchPrintsFiguresAndDeletesPassingRuns(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	out := filepath.Join(t.TempDir(), "bench")
	code, stdout, stderr := run(t, "bench", "voluntary-release", "--runs", "1", "--seed", "1", "--redis", "server", "--out", out)
	require.Equal(t, simcli.ExitOK, code, stdout+stderr)
	for _, col := range []string{"failover p50", "max/TTL", "handoff p50", "cmds/inst/RI", "peak RSS", "RI (renewal interval) = TTL/3", "VmHWM"} {
		require.Contains(t, stdout, col)
	}
	var row string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "voluntary-release ") {
			row = l
		}
	}
	require.NotEmpty(t, row, stdout)
	fields := strings.Fields(row)
	require.Equal(t, []string{"voluntary-release", "1", "0", "3s"}, fields[:4], row)
	require.Contains(t, row, "MiB")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "passing runs are deleted without --keep")
}

// A run that violates an invariant makes bench exit 1 and is kept, with its reports and its replay.
func TestBenchKeepsAViolatedRun(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	out := filepath.Join(t.TempDir(), "bench")
	code, stdout, stderr := run(t, "bench", "redis-partition", "--system", "naive", "--runs", "1", "--seed", "3", "--redis", "server", "--out", out)
	require.Equal(t, simcli.ExitViolated, code, stdout+stderr)
	dir := filepath.Join(out, "redis-partition-3")
	require.Contains(t, stdout, "FAIL")
	require.Contains(t, stdout, "kept: "+dir)
	require.Contains(t, stdout, "replay: "+os.Args[0]+" run redis-partition --seed 3")
	for _, f := range []string{"report.html", "history.jsonl", "result.json", "schedule.txt", "instances.log"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
}
