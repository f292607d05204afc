package simcli_test

import (
	"bytes"
	"errors"
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

	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/simcli"
)

var (
	instanceOnce sync.Once
	instanceBin  string
	instanceErr  error
)

// buildInstance compiles cmd/tenure-instance once per test binary, next to the simrun buildSimrun
// makes (removed by TestMain).
func buildInstance(t *testing.T) string {
	t.Helper()
	simrun := buildSimrun(t)
	instanceOnce.Do(func() {
		instanceBin = filepath.Join(filepath.Dir(simrun), "tenure-instance")
		out, err := exec.Command("go", "build", "-o", instanceBin, "../cmd/tenure-instance").CombinedOutput()
		if err != nil {
			instanceErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	require.NoError(t, instanceErr)
	return instanceBin
}

// referenceProcess writes the system file of the reference run as processes of tenure-instance, and
// returns its exec: name.
func referenceProcess(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	body := fmt.Sprintf(`{"name": "reference-process", "kind": "lease", "command": [%q, "--system", "reference"],
		"capabilities": {"beliefs": true, "fencing": true, "faketime": false}}`, buildInstance(t))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "system.json"), []byte(body), 0o644))
	return "exec:" + dir
}

// quickVerdicts runs the quick suite for one system and seed and returns each scenario's outcome per
// invariant ("crash-failover/failover" -> "pass").
func quickVerdicts(t *testing.T, system string, seed int) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "quick")
	code, stdout, stderr := run(t, "run", "--suite", "quick", "--system", system, "--seed", strconv.Itoa(seed),
		"--parallel", "5", "--redis", "server", "--quiet", "--out", out)
	require.Contains(t, []int{simcli.ExitOK, simcli.ExitViolated}, code, stdout+stderr)
	verdicts := map[string]string{}
	dirs, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		res, err := reports.ReadResult(filepath.Join(out, d.Name()))
		require.NoError(t, err)
		for _, inv := range res.Invariants {
			verdicts[res.Scenario+"/"+inv.Invariant] = string(inv.Outcome)
		}
	}
	require.NotEmpty(t, verdicts, stdout)
	return verdicts
}

// The reference run as processes (cmd/tenure-instance, recorded at the wire, polled over HTTP, crashed
// with SIGKILL and paused with SIGSTOP) is judged as the reference in process is, invariant by
// invariant, on the quick suite. Seeds: TENURE_PROCESS_SEEDS (e.g. "1-3"), default 1, since each seed
// runs the suite twice.
func TestProcessModeGivesTheInProcessVerdicts(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	first, last := 1, 1
	if v := os.Getenv("TENURE_PROCESS_SEEDS"); v != "" {
		_, err := fmt.Sscanf(v, "%d-%d", &first, &last)
		require.NoError(t, err, "TENURE_PROCESS_SEEDS=%s: want FIRST-LAST, e.g. 1-3", v)
	}
	system := referenceProcess(t)
	for seed := first; seed <= last; seed++ {
		in := quickVerdicts(t, "reference", seed)
		proc := quickVerdicts(t, system, seed)
		require.Equal(t, in, proc, "seed %d: the verdicts in process and as processes differ", seed)
	}
}

// descendants returns the live processes below pid (zombies left out) whose command line contains
// match.
func descendants(pid int, match string) []int {
	parent := map[int]int{}
	cmd := map[int]string{}
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
		i := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[i+1:])
		if i < 0 || len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		parent[p], _ = strconv.Atoi(fields[1])
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd[p] = string(b)
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				if strings.Contains(cmd[p], match) {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// deafProcess writes the system file of an instance that only a signal ends: it ignores the end of its
// stdin and writes nothing (so no broken pipe ends it either), and returns its exec: name and the
// marker in its command line.
func deafProcess(t *testing.T) (string, string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("TENURE_REQUIRE_FAKETIME") == "1" {
			t.Fatalf("python3 runs the process tests' small instances: %v", err)
		}
		t.Skipf("python3 is not installed: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "sim", "testdata", "process", "instance.py"))
	require.NoError(t, err)
	dir := t.TempDir()
	marker := "tenure-test-" + filepath.Base(dir)
	body := fmt.Sprintf(`{"name": "deaf", "kind": "lease", "command": [%q, %q, "deaf", %q]}`, py, script, marker)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "system.json"), []byte(body), 0o644))
	return "exec:" + dir, marker
}

// startProcessRun starts simrun on crash-failover with instances that only a signal ends, and returns
// once they run, with the processes simrun started (instances and redis-server).
func startProcessRun(t *testing.T, out string) (*exec.Cmd, []int) {
	t.Helper()
	system, marker := deafProcess(t)
	cmd := exec.Command(buildSimrun(t), "run", "crash-failover", "--system", system, "--seed", "1", "--redis", "server",
		"--out", out, "--quiet")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	require.Eventually(t, func() bool { return len(descendants(cmd.Process.Pid, marker)) == 3 }, 20*time.Second, 20*time.Millisecond,
		"simrun should start three instance processes: %s", &buf)
	kids := append(descendants(cmd.Process.Pid, marker), childRedis(cmd.Process.Pid)...)
	t.Cleanup(func() {
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL) // whatever a failing test left
		}
	})
	return cmd, kids
}

// requireAllGone waits until none of pids runs (zombies aside).
func requireAllGone(t *testing.T, pids []int, what string) {
	t.Helper()
	require.NotEmpty(t, pids)
	require.Eventually(t, func() bool {
		for _, p := range pids {
			if alive(p) {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "%s: processes outlived simrun", what)
}

// kill -9 of simrun in a process-mode run leaves no instance and no redis-server behind: each dies with
// it (Pdeathsig, from the thread that started it, which lives as long as simrun).
func TestKilledProcessRunLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	cmd, kids := startProcessRun(t, filepath.Join(t.TempDir(), "run"))
	time.Sleep(500 * time.Millisecond) // the instances are at work; nothing below depends on it
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_, _ = cmd.Process.Wait()
	requireAllGone(t, kids, "kill -9")
}

// Ctrl-C during a process-mode run: the instances are killed, the partial history saved, exit 130.
func TestInterruptedProcessRunKillsItsInstances(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd, kids := startProcessRun(t, out)
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "simrun exits with a status: %v", err)
	require.Equal(t, 130, ee.ExitCode())
	requireAllGone(t, kids, "Ctrl-C")
	require.FileExists(t, filepath.Join(out, "history.jsonl"))
}

// Process systems named wrongly on the command line are usage errors that leave nothing behind, and an
// instance that fails its start is named with its last words.
func TestProcessSystemBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.Mkdir(bad, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "system.json"), []byte(`{"name": "x", "kind": "lease", "command": ["sh"], "capabilites": {}}`), 0o644))
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"not found":     {[]string{"run", "crash-failover", "--exec", "no-such-program --flag", "--out", out}, `cannot run "no-such-program": executable file not found`},
		"open quote":    {[]string{"run", "crash-failover", "--exec", "python3 'x.py", "--out", out}, "the ' quote at character 9 is never closed"},
		"both":          {[]string{"run", "crash-failover", "--exec", "sh", "--system", "reference", "--out", out}, "give --system or --exec, not both"},
		"kind alone":    {[]string{"run", "crash-failover", "--kind", "election", "--out", out}, "--kind applies only to --exec"},
		"bad kind":      {[]string{"run", "crash-failover", "--exec", "sh", "--kind", "leader", "--out", out}, `--kind "leader": want lease or election`},
		"election kind": {[]string{"run", "crash-failover", "--exec", "sh", "--kind", "election", "--out", out}, "is for lease systems and exec is an election system"},
		"bad file":      {[]string{"run", "crash-failover", "--system", "exec:" + bad, "--out", out}, filepath.Join(bad, "system.json") + `: unknown field "capabilites"`},
		"no file":       {[]string{"run", "crash-failover", "--system", "exec:" + filepath.Join(dir, "none"), "--out", out}, "does not exist"},
		"matrix bad":    {[]string{"matrix", "--systems", "reference,exec:" + bad, "--out", out}, `unknown field "capabilites"`},
		"sentinel":      {[]string{"run", "sentinel-primary-kill", "--exec", "sh", "--out", out}, "process systems run on one Redis or on independent nodes"},
		"stall":         {[]string{"run", "late-replies-then-stall", "--exec", "sh", "--out", out}, "holds calls inside the instance's client"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			require.Equal(t, simcli.ExitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err), "a bad invocation leaves no output behind")
		})
	}
}

// An instance that exits at once fails the run's start: exit status 2, the instance named with what it
// wrote, nothing left running, no half-written output.
func TestProcessThatExitsAtOnceIsAUsageError(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := run(t, "run", "crash-failover", "--exec", "sh -c 'echo cannot find my config >&2; exit 7'", "--redis", "server", "--out", out)
	require.Equal(t, simcli.ExitUsage, code, stderr)
	require.Contains(t, stderr, "instance i0")
	require.Contains(t, stderr, "exited with status 7 before it called POST /ready")
	require.Contains(t, stderr, "cannot find my config")
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err))
}

// simrun list shows the process systems under examples/ of the current directory, and says what is
// wrong with one that does not load.
func TestListShowsExampleSystems(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"good": `{"name": "good-lock", "kind": "election", "command": ["sh"], "description": "a good lock"}`,
		"bad":  `{"name": "bad-lock", "kind": "lease"}`,
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "examples", name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "examples", name, "system.json"), []byte(body), 0o644))
	}
	t.Chdir(dir)
	code, out, _ := run(t, "list")
	require.Equal(t, simcli.ExitOK, code)
	require.Regexp(t, `exec:examples/good\s+election\s+a good lock`, out)
	require.Regexp(t, `exec:examples/bad\s+-\s+\(cannot be run: .*field "command": missing`, out)
}
