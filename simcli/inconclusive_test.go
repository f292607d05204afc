package simcli_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/simcli"
)

// lateRun writes simcli.LateHistory (the reference's saved redis-partition run, its slowest takeover
// 60 ms past its deadline; with lag, the canary 40 ms late throughout) into a run directory.
func lateRun(t *testing.T, lag bool) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, history.WriteFile(filepath.Join(dir, "history.jsonl"), simcli.LateHistory(t, lag)))
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
