package simcli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/simcli"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := simcli.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInputIsAUsageErrorAndLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown scenario":   {[]string{"run", "no-such", "--out", out}, "simrun list shows them all"},
		"unknown suite":      {[]string{"run", "--suite", "nope", "--out", out}, "valid suites: ci"},
		"zero time scale":    {[]string{"run", "crash-failover", "--time-scale", "0", "--out", out}, "must be > 0"},
		"negative scale":     {[]string{"run", "crash-failover", "--time-scale", "-1", "--out", out}, "must be > 0"},
		"zero instances":     {[]string{"run", "crash-failover", "--instances", "0", "--out", out}, "at least 1"},
		"too many":           {[]string{"run", "crash-failover", "--instances", "100000", "--out", out}, "more than"},
		"NaN time scale":     {[]string{"run", "crash-failover", "--time-scale", "NaN", "--out", out}, "want a number"},
		"bad seed":           {[]string{"run", "crash-failover", "--seed", "12abc", "--out", out}, "want a whole number of at least 0"},
		"slot beyond fleet":  {[]string{"run", "scale-down-3-to-2", "--instances", "2", "--out", out}, "only 2 instances"},
		"pause on embedded":  {[]string{"run", "redis-pause", "--redis", "embedded", "--out", out}, "cannot pause"},
		"wrong kind":         {[]string{"run", "election-leader-crash-redis", "--system", "naive", "--out", out}, "is for election systems and naive is a lease system: pick one of the lease scenarios (simrun list) or an election system"},
		"zero parallel":      {[]string{"run", "crash-failover", "--parallel", "0", "--out", out}, "--parallel must be at least 1"},
		"unknown system":     {[]string{"run", "crash-failover", "--system", "nope", "--out", out}, `unknown system "nope"`},
		"unknown backend":    {[]string{"run", "crash-failover", "--redis", "bogus", "--out", out}, "auto, server, embedded"},
		"no scenario":        {[]string{"run", "--out", out}, "name at least one scenario"},
		"unknown command":    {[]string{"fly"}, "unknown command"},
		"report without dir": {[]string{"report"}, "simrun report DIR"},
		"report of nothing":  {[]string{"report", dir}, "found an empty directory"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			require.Equal(t, simcli.ExitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err), "a bad invocation must leave no output behind")
		})
	}
}

// A run that fails to start must not delete an (empty) directory the user already had, nor leave
// anything in it.
func TestFailedRunKeepsTheUsersDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no redis-server: --redis server fails at setup
	code, _, stderr := run(t, "run", "crash-failover", "--redis", "server", "--out", dir)
	require.Equal(t, simcli.ExitUsage, code, stderr)
	require.Contains(t, stderr, "apt-get install redis-server")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err, "the directory is still there")
	require.Empty(t, entries, "the run's own files, its marker included, are removed")
}

func TestListNamesEverything(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "list")
	require.Equal(t, simcli.ExitOK, code)
	for _, want := range []string{"crash-failover", "random-nemesis", "ci", "soak", "reference", "naive"} {
		require.Contains(t, out, want)
	}
}

// The same seed must give the same fault schedule, run after run.
func TestSameSeedSameSchedule(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	var schedules []string
	for i := 0; i < 2; i++ {
		dir := filepath.Join(t.TempDir(), "run")
		code, out, stderr := run(t, "run", "crash-failover", "--seed", "7", "--redis", "server", "--out", dir, "--quiet")
		require.Equal(t, simcli.ExitOK, code, out+stderr)
		b, err := os.ReadFile(filepath.Join(dir, "schedule.txt"))
		require.NoError(t, err)
		schedules = append(schedules, string(b))
		for _, f := range []string{"report.html", "linearizability.html", "summary.md", "result.json", "junit.xml", "history.jsonl"} {
			require.FileExists(t, filepath.Join(dir, f))
		}
		require.Contains(t, out, os.Args[0]+" run crash-failover --seed 7")
		require.Contains(t, out, "--redis server")
	}
	require.Equal(t, schedules[0], schedules[1])
	require.Contains(t, schedules[0], "crash")
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildSimrun compiles the command once per test binary.
func buildSimrun(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "simrun-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "simrun")
		out, err := exec.Command("go", "build", "-o", builtBin, "../cmd/simrun").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// childRedis returns the PIDs of redis-server processes whose parent is pid.
func childRedis(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		close := strings.LastIndexByte(s, ')')
		if close < 0 || !strings.Contains(s[:close], "redis-server") {
			continue
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

func startSimrun(t *testing.T, bin, out string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "run", "crash-failover", "--seed", "1", "--redis", "server", "--out", out, "--quiet")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	require.Eventually(t, func() bool { return len(childRedis(cmd.Process.Pid)) > 0 }, 20*time.Second, 20*time.Millisecond,
		"simrun should start a private redis-server")
	return cmd
}

// Ctrl-C: faults end, every child process dies, the partial history is saved, exit status 130.
func TestInterruptSavesPartialHistoryAndKillsChildren(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	bin := buildSimrun(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := startSimrun(t, bin, out)
	kids := childRedis(cmd.Process.Pid)
	time.Sleep(time.Second) // let the run record something; the assertion below does not depend on it
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 130, ee.ExitCode())
	output := cmd.Stdout.(*bytes.Buffer).String()
	require.Contains(t, output, "INTERRUPTED crash-failover", output)
	require.NotContains(t, output, "FAIL crash-failover", "an interrupted run is not a failed one")
	require.Regexp(t, `crash-failover\s+INTERRUPTED`, output)
	for _, k := range kids {
		require.False(t, alive(k), "redis-server %d outlived simrun", k)
	}
	h, err := history.ReadFile(filepath.Join(out, "history.jsonl"))
	require.NoError(t, err)
	require.True(t, h.Meta.Interrupted)
}

// Even a SIGKILLed simrun leaves no redis-server behind (Pdeathsig).
func TestKilledSimrunLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	bin := buildSimrun(t)
	cmd := startSimrun(t, bin, filepath.Join(t.TempDir(), "run"))
	kids := childRedis(cmd.Process.Pid)
	require.NoError(t, cmd.Process.Kill())
	_, _ = cmd.Process.Wait()
	require.Eventually(t, func() bool {
		for _, k := range kids {
			if alive(k) {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "redis-server children must die with simrun")
}

// Saved histories of real runs are re-checked: the naive design's double polls in a partition must
// still be caught, and the reference's run of the same scenario must still pass.
func TestReportRechecksSavedHistories(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir  string
		code int
		want string
	}{
		{"naive-redis-partition", simcli.ExitViolated, "VIOLATED"},
		{"reference-redis-partition", simcli.ExitOK, "1 passed, 0 failed"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := t.TempDir()
			b, err := os.ReadFile(filepath.Join("testdata", tc.dir, "history.jsonl"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "history.jsonl"), b, 0o644))
			code, out, stderr := run(t, "report", dir)
			require.Equal(t, tc.code, code, out+stderr)
			require.Contains(t, out, tc.want)
			for _, f := range []string{"report.html", "linearizability.html", "summary.md", "result.json", "junit.xml"} {
				require.FileExists(t, filepath.Join(dir, f))
			}
		})
	}
}

// A scenario that cannot be set up is that scenario's error: the others still run and are judged, the
// summary and index list it, and the exit code says a setup failed.
func TestOneScenarioSetupErrorDoesNotAbortTheOthers(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := run(t, "run", "election-leader-crash-pg", "single-instance", "--seed", "1",
		"--postgres", "postgres://nobody@127.0.0.1:1/x?connect_timeout=1", "--redis", "server", "--quiet", "--out", out)
	require.Equal(t, simcli.ExitUsage, code, stdout+stderr)
	require.Contains(t, stdout, "PASS single-instance", "the scenario after the failed one still ran")
	require.Regexp(t, `election-leader-crash-pg\s+ERROR`, stdout)
	require.Contains(t, stderr, "1 of 2 scenarios could not be set up")
	require.FileExists(t, filepath.Join(out, "index.html"))
	require.FileExists(t, filepath.Join(out, "single-instance", "report.html"))
}
