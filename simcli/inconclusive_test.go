package simcli_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/simcli"
)

// lateRun is the reference's saved redis-partition run with its failover bound set 20 ms below its
// slowest takeover, so that takeover is a violation; with lag set, the harness's canary woke 40 ms late
// in every window of the run, as on a starved machine.
func lateRun(t *testing.T, lag bool) string {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("testdata", "reference-redis-partition", "history.jsonl"))
	require.NoError(t, err)
	var slowest time.Duration
	for _, fo := range checker.Check(h, checker.DefaultOptions()).Failovers {
		slowest = max(slowest, fo.Latency)
	}
	require.Positive(t, slowest)
	h.Meta.FailoverBound = slowest - 20*time.Millisecond
	if lag {
		l := &history.Lag{Window: 100 * time.Millisecond, Floor: 10 * time.Millisecond}
		for at := time.Duration(0); at < h.Meta.Duration; at += l.Window {
			l.Samples = append(l.Samples, history.LagSample{At: at, Canary: 40 * time.Millisecond})
			l.Windows++
		}
		l.Canary = history.LagSummary{Max: 40 * time.Millisecond, P99: 40 * time.Millisecond}
		h.Meta.Lag, h.Meta.Schema = l, history.SchemaVersion
	}
	dir := t.TempDir()
	require.NoError(t, history.WriteFile(filepath.Join(dir, "history.jsonl"), h))
	return dir
}

// A run whose only violation coincided with the harness's lag is inconclusive: exit 3, said as such;
// the same run without lag fails.
func TestInconclusiveRunExitsThree(t *testing.T) {
	t.Parallel()
	code, out, stderr := run(t, "report", lateRun(t, false))
	require.Equal(t, simcli.ExitViolated, code, out+stderr)
	require.Contains(t, out, "0 passed, 1 failed")

	dir := lateRun(t, true)
	code, out, stderr = run(t, "report", dir)
	require.Equal(t, simcli.ExitInconclusive, code, out+stderr)
	require.Regexp(t, `redis-partition\s+INCONCLUSIVE`, out)
	require.Contains(t, out, "0 passed, 0 failed, 1 inconclusive")

	// The same through the built command: the process's exit status is 3.
	cmd := exec.Command(buildSimrun(t), "report", dir)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v: %s", err, b)
	require.Equal(t, 3, ee.ExitCode(), string(b))
}

// In a set of runs a failure outweighs an inconclusive run, which outweighs a pass.
func TestSuiteExitCodeWeighsInconclusive(t *testing.T) {
	t.Parallel()
	suite := t.TempDir()
	copyRun := func(name, from string) {
		t.Helper()
		h, err := history.ReadFile(filepath.Join(from, "history.jsonl"))
		require.NoError(t, err)
		require.NoError(t, history.WriteFile(filepath.Join(suite, name, "history.jsonl"), h))
	}
	mk := func(name string) string { return filepath.Join(suite, name) }
	for _, n := range []string{"pass", "inconclusive", "fail"} {
		require.NoError(t, os.MkdirAll(mk(n), 0o755))
	}
	copyRun("pass", filepath.Join("testdata", "reference-redis-partition"))
	copyRun("inconclusive", lateRun(t, true))
	require.NoError(t, reports.WriteMarker(suite, reports.Marker{Kind: reports.KindSuite, Runs: []string{"pass", "inconclusive"}}))
	code, out, _ := run(t, "report", suite)
	require.Equal(t, simcli.ExitInconclusive, code, out)
	require.Contains(t, out, "1 passed, 0 failed, 1 inconclusive")

	copyRun("fail", lateRun(t, false))
	require.NoError(t, reports.WriteMarker(suite, reports.Marker{Kind: reports.KindSuite, Runs: []string{"pass", "inconclusive", "fail"}}))
	code, out, _ = run(t, "report", suite)
	require.Equal(t, simcli.ExitViolated, code, out)
	require.Contains(t, out, "1 passed, 1 failed, 1 inconclusive")
}
