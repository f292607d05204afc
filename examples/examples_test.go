// Package examples_test runs each example process system (one directory per system, docs/protocol.md)
// through one scenario, so that an example that no longer starts, records or polls fails the build.
package examples_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
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
			// 1: the examples do not balance; 3: a timing verdict the machine's load made inconclusive.
			require.Contains(t, []int{simcli.ExitOK, simcli.ExitViolated, simcli.ExitInconclusive}, code,
				"%s%s", stdout.String(), stderr.String())
			res, err := reports.ReadResult(out)
			require.NoError(t, err)
			got := map[string]string{}
			for _, inv := range res.Invariants {
				got[inv.Invariant] = string(inv.Outcome)
			}
			for _, inv := range []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvValidity, checker.InvLinearizable} {
				require.Equal(t, string(checker.Pass), got[inv], "%s in %s; report: %s\n%s", inv, tc.scenario, out, stdout.String())
			}
			require.NotContains(t, []string{string(checker.Skipped), string(checker.Unknown)}, got[checker.InvFailover],
				"the crash gave the failover check nothing to judge; report: %s", out)
		})
	}
}
