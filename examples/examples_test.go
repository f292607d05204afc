// Package examples_test runs each example process system (one directory per system, docs/protocol.md)
// through one scenario, so that an example that no longer starts, records or polls fails the build.
package examples_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/internal/lagtest"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/simcli"
)

// needs skips the test when an example's runtime is missing, or fails it under TENURE_REQUIRE_EXAMPLES=1
// (CI, whose .ci/run installs them).
func needs(t *testing.T, what, fix string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("TENURE_REQUIRE_EXAMPLES") == "1" {
		t.Fatalf("%s is missing and TENURE_REQUIRE_EXAMPLES=1: %s", what, fix)
	}
	t.Skipf("%s is missing (%s); set TENURE_REQUIRE_EXAMPLES=1 to make this a failure", what, fix)
}

func commandWorks(name string, args ...string) bool { return exec.Command(name, args...).Run() == nil }

// needsNode requires node and an example's packages, installed by npm ci from its lockfile.
func needsNode(t *testing.T, example, pkg string) {
	t.Helper()
	_, err := os.Stat(filepath.Join(example, "node_modules", pkg))
	needs(t, example+"'s packages", "npm ci in examples/"+example, commandWorks("node", "--version") && err == nil)
}

// needsJava requires the JDK (javac and java): the Java example runs from its source file.
func needsJava(t *testing.T) {
	t.Helper()
	needs(t, "a JDK (javac, java)", "apt-get install openjdk-17-jdk-headless", commandWorks("javac", "-version") && commandWorks("java", "-version"))
}

// The Java example compiles on the JDK alone, with every lint warning an error; its runs compile it
// again from source (java Election.java).
func TestJavaExampleCompiles(t *testing.T) {
	needsJava(t)
	t.Parallel()
	out, err := exec.Command("javac", "-Xlint:all", "-Werror", "-d", t.TempDir(), filepath.Join("java-election", "Election.java")).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// Each example crashes a holder (a leader) at a tenth of spec time. The examples have no fencing and
// no balancing, and their takeovers wait for a retry tick, so only what a crash must never break is
// required: one holder at a time in belief and at the resource, every poll inside its poller's lease,
// and a linearizable history; the failover must have been judged (the run recorded takeovers).
func TestExampleSurvivesACrash(t *testing.T) {
	redistest.Start(t) // skips (or fails under TENURE_REQUIRE_REDIS) without redis-server
	python := "import sys; sys.path.append('/usr/lib/python3/dist-packages'); import redis.asyncio, redis.lock"
	for _, tc := range []struct {
		system, scenario string
		check            func(t *testing.T)
	}{
		{"asyncio-election", "election-leader-crash-redis", func(t *testing.T) {
			needs(t, "python3 with redis-py", "apt-get install python3-redis", commandWorks("python3", "-c", python))
		}},
		{"redis-py-lock", "crash-failover", func(t *testing.T) {
			needs(t, "python3 with redis-py", "apt-get install python3-redis", commandWorks("python3", "-c", python))
		}},
		{"node-redlock", "crash-failover", func(t *testing.T) { needsNode(t, "node-redlock", "redlock") }},
		{"node-sesamecare-redlock", "crash-failover", func(t *testing.T) {
			needsNode(t, "node-sesamecare-redlock", "@sesamecare-oss/redlock")
		}},
		{"node-redis-semaphore", "crash-failover", func(t *testing.T) {
			needsNode(t, "node-redis-semaphore", "redis-semaphore")
		}},
		{"java-election", "election-leader-crash-redis", func(t *testing.T) { needsJava(t) }},
	} {
		t.Run(tc.system, func(t *testing.T) {
			tc.check(t)
			t.Parallel()
			dir, err := filepath.Abs(tc.system)
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "run")
			var stdout, stderr bytes.Buffer
			code := simcli.Main(context.Background(), []string{"run", tc.scenario, "--system", "exec:" + dir,
				"--seed", "1", "--time-scale", "0.1", "--redis", "server", "--quiet", "--out", out}, &stdout, &stderr)
			// 1: the examples do not balance; 3: a timing verdict the machine's load made inconclusive
			// (judgeCrash makes the test inconclusive when that verdict is the failover's).
			require.Contains(t, []int{simcli.ExitOK, simcli.ExitViolated, simcli.ExitInconclusive}, code,
				"%s%s", stdout.String(), stderr.String())
			res, err := reports.ReadResult(out)
			require.NoError(t, err)
			judgeCrash(t, res, tc.scenario, out, stdout.String())
		})
	}
}

// judgeCrash requires of an example's crash run what a crash must never break, and that the failover
// check judged the takeovers. A failover verdict the harness's own lag made inconclusive judged nothing:
// the test is then inconclusive (lagtest), counted, never a pass.
func judgeCrash(t testing.TB, res reports.RunResult, scenario, out, stdout string) {
	t.Helper()
	got := map[string]string{}
	var why []string // what the verdicts said, for a failure's message (the run's directory is a temporary one)
	for _, inv := range res.Invariants {
		got[inv.Invariant] = string(inv.Outcome)
		if inv.Outcome != checker.Pass {
			why = append(why, fmt.Sprintf("%s %s: %s", inv.Invariant, inv.Outcome, inv.Message))
		}
	}
	for _, inv := range []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvValidity, checker.InvLinearizable} {
		require.Equal(t, string(checker.Pass), got[inv], "%s in %s; report: %s\n%s", inv, scenario, out, stdout)
	}
	if got[checker.InvFailover] == string(checker.Inconclusive) {
		lagtest.Inconclusive(t, "%s: a takeover coincided with the harness's own lag, so the failover check could not judge it; report: %s",
			scenario, out)
	}
	if got[checker.InvFailover] == string(checker.Unknown) {
		// The crash hit an instance that held nothing: nobody held ep-0 when it came (an example that
		// had not taken it yet on a loaded machine), so the slot was crashed instead. The run cannot
		// show the takeover this test is for; it is run once more, and fails if that happens again.
		lagtest.Inconclusive(t, "%s: the crash found no holding to end, so there was no takeover to judge; report: %s\n%s",
			scenario, out, strings.Join(why, "\n"))
	}
	require.NotContains(t, []string{string(checker.Skipped), string(checker.Unknown)}, got[checker.InvFailover],
		"the crash gave the failover check nothing to judge; report: %s\n%s", out, strings.Join(why, "\n"))
}

// A crash run whose failover verdict is inconclusive, or unknown (the crash ended no holding), makes the
// test inconclusive, counted in TENURE_INCONCLUSIVE_LOG; safety is judged first, whatever the load.
func TestJudgeCrashCountsAnInconclusiveFailoverApart(t *testing.T) {
	log := filepath.Join(t.TempDir(), "inconclusive.txt")
	t.Setenv(lagtest.LogEnv, log)
	result := func(failover, linearizable checker.Outcome) reports.RunResult {
		res := reports.RunResult{}
		for _, inv := range []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvValidity} {
			res.Invariants = append(res.Invariants, reports.InvariantResult{Invariant: inv, Outcome: checker.Pass})
		}
		res.Invariants = append(res.Invariants, reports.InvariantResult{Invariant: checker.InvLinearizable, Outcome: linearizable},
			reports.InvariantResult{Invariant: checker.InvFailover, Outcome: failover})
		return res
	}
	judged := func(res reports.RunResult) (skipped, failed bool) {
		ft := &fakeT{TB: t}
		done := make(chan struct{})
		go func() { // FailNow and SkipNow end the goroutine
			defer close(done)
			judgeCrash(ft, res, "crash-failover", "out", "")
		}()
		<-done
		return ft.skipped, ft.failed
	}
	skipped, failed := judged(result(checker.Pass, checker.Pass))
	require.False(t, skipped || failed, "a judged takeover passes")
	skipped, failed = judged(result(checker.Inconclusive, checker.Pass))
	require.True(t, skipped, "an inconclusive failover judged nothing: the test is inconclusive, not passed")
	require.False(t, failed)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Contains(t, string(b), "INCONCLUSIVE")
	_, failed = judged(result(checker.Inconclusive, checker.Violated))
	require.True(t, failed, "safety is judged whatever the load")
	skipped, failed = judged(result(checker.Unknown, checker.Pass))
	require.True(t, skipped && !failed, "a crash that ended no holding judged nothing: inconclusive, run again")
	skipped, failed = judged(result(checker.Skipped, checker.Pass))
	require.True(t, failed && !skipped, "a skipped failover is never a pass")
}

// fakeT records how a check ended without ending the test that runs it.
type fakeT struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Name() string          { return "TestExampleSurvivesACrash/fake" }
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) FailNow()              { f.failed = true; runtime.Goexit() }
func (f *fakeT) Skip(...any)           { f.skipped = true; runtime.Goexit() }
func (f *fakeT) Skipf(string, ...any)  { f.skipped = true; runtime.Goexit() }
func (f *fakeT) SkipNow()              { f.skipped = true; runtime.Goexit() }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }
func (f *fakeT) Logf(string, ...any)   {}

// The asyncio example renews by GET then EXPIRE. Frozen by a wire pause just after its GET's reply, for
// longer than the TTL, its leader wakes to send the EXPIRE its stale GET decided on, believes it renewed,
// and acts beside the standby that took the role meanwhile: two leaders act at once. The pause is what
// shows it: the history holds the pause, taken by the leader right after a GET it sent.
func TestWirePauseCatchesTheAsyncioGetThenExpire(t *testing.T) {
	redistest.Start(t)
	needs(t, "python3 with redis-py", "apt-get install python3-redis",
		commandWorks("python3", "-c", "import sys; sys.path.append('/usr/lib/python3/dist-packages'); import redis.asyncio"))
	t.Parallel()
	dir, err := filepath.Abs("asyncio-election")
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	code := simcli.Main(context.Background(), []string{"run", "election-pause-after-get-redis", "--system", "exec:" + dir,
		"--seed", "1", "--time-scale", "0.1", "--redis", "server", "--quiet", "--out", out}, &stdout, &stderr)
	require.Equal(t, simcli.ExitViolated, code, "%s%s", stdout.String(), stderr.String())
	res, err := reports.ReadResult(out)
	require.NoError(t, err)
	got := map[string]checker.Outcome{}
	for _, inv := range res.Invariants {
		got[inv.Invariant] = inv.Outcome
	}
	require.Equal(t, checker.Violated, got[checker.InvSingleHolder], "two leaders believed at once; report: %s", out)
	require.Equal(t, checker.Violated, got[checker.InvSinglePoller], "both acted; report: %s", out)
	h, err := os.ReadFile(filepath.Join(out, "history.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(h), "wire pause: after the reply to GET froze", "the pause took hold at a GET's reply")
}
