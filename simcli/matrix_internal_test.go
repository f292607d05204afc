package simcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/lagtest"
	"github.com/tenurelabs/tenure/internal/pgtest"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	_ "github.com/tenurelabs/tenure/systems/baselines"
	_ "github.com/tenurelabs/tenure/systems/peers"
)

// The matrix's shape on a small fixed subset: each reference system passes, and each baseline and peer
// library fails the cell its design is known to be weak in, by one of the invariants that weakness breaks.
func TestMatrixShape(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs twelve scenarios")
	}
	redistest.Start(t) // skips (or fails under TENURE_REQUIRE_REDIS) without redis-server
	pgtest.Connect(t)  // likewise for PostgreSQL
	expect := []struct {
		system, scenario string
		// failsWith lists the cell words of which at least one must appear; nil means the cell passes.
		failsWith []string
	}{
		{"reference", "gc-pause", nil},
		{"spec-naive", "gc-pause", []string{"double-poll"}},
		{"election-redis", "election-renewal-gap-redis", nil},
		{"getexpire", "election-renewal-gap-redis", []string{"two-holders", "double-poll", "outside-lease"}},
		{"election-redis", "election-leader-partition-redis", nil},
		{"heartbeat-takeover", "election-leader-partition-redis", []string{"two-holders", "double-poll"}},
		{"election-postgres", "election-conn-reset-pg", nil},
		{"pg-advisory", "election-conn-reset-pg", []string{"two-holders", "double-poll"}},
		// The peer libraries have no guard against a Redis that comes back empty.
		{"reference", "redis-restart-empty", nil},
		{"redislock", "redis-restart-empty", []string{"two-holders", "double-poll"}},
		{"redsync", "redis-restart-empty", []string{"two-holders", "double-poll"}},
		// Redlock survives one node restarting empty, but nothing stops a holder that froze.
		{"redlock", "gc-pause", []string{"two-holders", "double-poll"}},
	}
	f := matrixFlags{cells: map[[2]string]bool{}, seeds: 1}
	var systems, scens []string
	for _, e := range expect {
		f.cells[[2]string{e.system, e.scenario}] = true
		systems = appendNew(systems, e.system)
		scens = appendNew(scens, e.scenario)
	}
	f.systems, f.scenarios = strings.Join(systems, ","), strings.Join(scens, ",")
	f.run.redis, f.run.out, f.run.parallel = "server", filepath.Join(t.TempDir(), "matrix"), 4
	f.run.seed, f.run.seedSet = 1, true

	var out, errb bytes.Buffer
	start := time.Now()
	code, err := runMatrix(context.Background(), f, &out, &errb)
	t.Logf("matrix took %s:\n%s%s", time.Since(start).Round(time.Second), out.String(), errb.String())
	require.NoError(t, err)
	if code == ExitInconclusive {
		lagtest.Inconclusive(t, "no cell went against its expectation, but a cell could not be judged: the harness ran too late")
	}
	require.Equal(t, ExitOK, code)

	md, err := os.ReadFile(filepath.Join(f.run.out, "matrix.md"))
	require.NoError(t, err)
	table := string(md)
	rows := 0
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| system |") {
			rows++
		}
	}
	require.Equal(t, len(systems), rows, "one row per system:\n%s", table)
	for _, e := range expect {
		cell := cellOf(t, table, e.system, e.scenario)
		if e.failsWith != nil {
			require.True(t, characteristic(e.system, e.scenario), "%s on %s is the cell its flaw shows in", e.system, e.scenario)
		}
		if e.failsWith == nil {
			require.Equal(t, "pass", cell, "%s on %s", e.system, e.scenario)
			continue
		}
		require.NotEqual(t, "pass", cell, "%s must fail %s", e.system, e.scenario)
		found := false
		for _, w := range e.failsWith {
			found = found || strings.Contains(cell, w)
		}
		if !found && e.scenario == "redis-restart-empty" {
			// The flaw needs a holder that keeps believing across the wipe while another takes the
			// empty key. At time scale 0.1 the restart itself is not scaled: on a loaded machine it
			// can outlast every holder's refresh, each refresh fails, every holder lets go, and the
			// fleet takes the endpoints again from nothing. The history says whether that happened.
			runDir := filepath.Join(f.run.out, e.system, e.scenario+"-1")
			if why := noHoldingSurvivedTheWipe(t, filepath.Join(runDir, "history.jsonl")); why != "" {
				lagtest.Inconclusive(t, "%s on %s could not show its flaw: %s", e.system, e.scenario, why)
			}
		}
		require.True(t, found, "%s on %s: cell %q names none of %v", e.system, e.scenario, cell, e.failsWith)
		// Every violation is linked to its saved report and listed with a replay command.
		require.Contains(t, cell, "report.html")
		require.Contains(t, table, " run "+e.scenario+" --seed 1")
	}
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// cellOf reads one cell of the Markdown tables.
func cellOf(t *testing.T, table, system, scenario string) string {
	t.Helper()
	fields := func(line string) []string {
		parts := strings.Split(line, "|")
		if len(parts) < 3 {
			return nil
		}
		parts = parts[1 : len(parts)-1]
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	var header []string
	for _, l := range strings.Split(table, "\n") {
		f := fields(l)
		switch {
		case len(f) == 0:
		case f[0] == "system":
			header = f
		case f[0] == system && len(f) == len(header):
			for i, h := range header {
				if h == scenario {
					// A cell reads "<status symbol> <text>", starred when characteristic.
					_, text, _ := strings.Cut(f[i], " ")
					return strings.TrimSuffix(text, " ★")
				}
			}
		}
	}
	t.Fatalf("no cell for %s on %s in\n%s", system, scenario, table)
	return ""
}

func TestMatrixCellsAndTables(t *testing.T) {
	t.Parallel()
	cells := []matrixCell{
		{system: "reference", scenario: "gc-pause", runs: []matrixRun{{seed: 1, passed: true}, {seed: 2, passed: true}}},
		{system: "spec-naive", scenario: "gc-pause", runs: []matrixRun{
			{seed: 1, dir: "spec-naive/gc-pause-1", words: []string{"two-holders", "double-poll"}},
			{seed: 2, passed: true}}},
		{system: "getexpire", scenario: "election-renewal-gap-redis", runs: []matrixRun{
			{seed: 1, dir: "getexpire/election-renewal-gap-redis-1", words: []string{"outside-lease"}},
			{seed: 2, dir: "getexpire/election-renewal-gap-redis-2", words: []string{"two-holders", "outside-lease"}}}},
		{system: "pg-advisory", scenario: "election-conn-reset-pg", runs: []matrixRun{{seed: 1, errored: true}, {seed: 2, passed: true}}},
	}
	require.Equal(t, "pass", cells[0].text(2))
	require.Equal(t, "1/2 two-holders double-poll", cells[1].text(2))
	require.Equal(t, "2/2 outside-lease two-holders", cells[2].text(2))
	require.Equal(t, "0/2 error", cells[3].text(2))

	m := matrixModel(cells, 2, nil, nil, "")
	md := reports.MatrixMarkdown(m, true)
	require.Contains(t, md, "Lease systems:\n\n| system | gc-pause |\n|---|---|\n| reference | ✅ pass |\n| spec-naive | ☑️ [1/2 two-holders double-poll](spec-naive/gc-pause-1/report.html) ★ |\n")
	require.Contains(t, md, "Election on Redis:\n\n| system | election-renewal-gap-redis |\n|---|---|\n| getexpire | ☑️ [2/2 outside-lease two-holders](getexpire/election-renewal-gap-redis-1/report.html) ★ |\n")
	require.Contains(t, md, "Election on PostgreSQL:\n\n| system | election-conn-reset-pg |\n|---|---|\n| pg-advisory | ❌ pass, but expected to fail ★ |\n")
	require.Equal(t, "pass", cellOf(t, md, "reference", "gc-pause"))
	require.True(t, strings.HasPrefix(md, "### ❌ matrix: FAILED · 4 cells: 1 pass, 2 expected failures, 1 unexpected"), md)

	txt := matrixPlain(cells, 2)
	require.Contains(t, txt, "spec-naive\n  gc-pause                    1/2 two-holders double-poll  (expected failure: its known flaw)\n")

	runs := failingRuns(cells, "out")
	require.Contains(t, runs, "spec-naive / gc-pause seed 1: two-holders double-poll\n  report: out/spec-naive/gc-pause-1/report.html\n")
	require.Contains(t, runs, "pg-advisory / election-conn-reset-pg seed 1: could not be set up\n")
	require.NotContains(t, runs, "seed 2: \n")
}

// The columns follow the order of --scenarios, within each kind of scenario; without it, the
// scenarios' own order.
func TestMatrixColumnsFollowTheScenariosGiven(t *testing.T) {
	t.Parallel()
	plan := func(scens string) []string {
		f := matrixFlags{systems: "reference,election-redis", scenarios: scens}
		f.run.redis, f.run.parallel, f.run.out = "server", 1, filepath.Join(t.TempDir(), "m") // planned only
		cells, _, _, err := planMatrix(&f)
		require.NoError(t, err)
		return colsOf(cells)
	}
	require.Equal(t, []string{"redis-partition", "crash-failover", "single-instance", "election-leader-crash-redis"},
		plan("election-leader-crash-redis,redis-partition,crash-failover,single-instance"))
	require.Equal(t, []string{"single-instance", "crash-failover", "redis-partition", "election-leader-crash-redis"},
		plan("single-instance,crash-failover,election-leader-crash-redis,redis-partition"))
	// Without --scenarios: every scenario, lease ones first, each kind in the scenarios' own order.
	idx := map[string]int{}
	for i, n := range scenarios.Names() {
		idx[n] = i
	}
	cols := plan("")
	require.Greater(t, len(cols), 10)
	for i := 1; i < len(cols); i++ {
		if groupOf(cols[i-1]) == groupOf(cols[i]) {
			require.Less(t, idx[cols[i-1]], idx[cols[i]], "%s before %s", cols[i-1], cols[i])
		} else {
			require.Less(t, groupOf(cols[i-1]), groupOf(cols[i]))
		}
	}
}

// A matrix run's replay command names the backend it runs on: what auto chose on this machine, or the
// deployment its scenario needs.
func TestMatrixReplayNamesTheBackendThatRuns(t *testing.T) {
	t.Parallel()
	f := matrixFlags{systems: "reference", scenarios: "crash-failover,sentinel-primary-kill,redis-restart-from-snapshot"}
	f.run.redis, f.run.parallel, f.run.out = "auto", 1, filepath.Join(t.TempDir(), "m")
	_, jobs, _, err := planMatrix(&f)
	require.NoError(t, err)
	want := map[string]string{"crash-failover": resolveAuto("auto"), "sentinel-primary-kill": "sentinel", "redis-restart-from-snapshot": "server:rdb"}
	if resolveAuto("auto") != "server" {
		delete(want, "sentinel-primary-kill") // without redis-server, auto cannot upgrade to these
		delete(want, "redis-restart-from-snapshot")
	}
	for _, j := range jobs {
		w, ok := want[j.opts.Scenario.Name]
		if !ok {
			continue
		}
		require.Regexp(t, "--redis "+w+"( |$)", j.opts.Command)
		require.NotContains(t, j.opts.Command, "auto")
	}
}

// An error every instance of a fleet met alike is said once.
func TestErrTextSaysEachLineOnce(t *testing.T) {
	t.Parallel()
	same := errors.New("lease: invalid config: OpTimeout (250ms) must be less than RenewInterval (10ms)")
	err := fmt.Errorf("%w: crash-failover: sim: start fleet: %w", errUsage, errors.Join(same, same, same, errors.New("another")))
	require.Equal(t, "crash-failover: sim: start fleet: "+same.Error()+"\nanother", errText(err))
}

// Bad flags are usage errors that name what is wrong and write nothing.
func TestMatrixBadFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "m")
	full := filepath.Join(dir, "full")
	require.NoError(t, os.MkdirAll(full, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--systems", "nope"}, `unknown system "nope"`},
		{[]string{"--scenarios", "gc-pause,,crash-failover"}, "empty name"},
		{[]string{"--scenarios", "gc-pause,gc-pause"}, "names gc-pause twice"},
		{[]string{"--scenarios", "no-such"}, `unknown scenario "no-such"`},
		{[]string{"--systems", "reference", "--scenarios", "election-leader-crash-pg"}, "no system of reference fits"},
		{[]string{"--seeds", "0"}, "at least 1"},
		{[]string{"--parallel", "0"}, "--parallel must be at least 1"},
		{[]string{"--system", "reference"}, "unknown flag --system for matrix: did you mean --systems or --suite?"},
		{[]string{"gc-pause"}, "no positional arguments"},
		{[]string{"--redis", "bogus"}, "bogus"},
		{[]string{"--out", full}, "holds files simrun did not write (1 entry: x)"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"matrix", "--out", out}, tc.args...)
		code := Main(context.Background(), args, &stdout, &stderr)
		require.Equal(t, ExitUsage, code, "%v", tc.args)
		require.Contains(t, stderr.String(), tc.want, "%v", tc.args)
		_, err := os.Stat(out)
		require.True(t, os.IsNotExist(err), "%v wrote %s", tc.args, out)
	}
}

// The matrix starts its longest runs first, so that its workers finish together; ties keep the table's
// order.
func TestMatrixStartsLongestFirst(t *testing.T) {
	t.Parallel()
	var jobs []job
	for _, d := range []time.Duration{10, 30, 20, 30} {
		jobs = append(jobs, job{opts: sim.Options{Scenario: sim.Scenario{Duration: d * time.Second}}})
	}
	require.Equal(t, []int{1, 3, 2, 0}, longestFirst(jobs))
}

// A scenario with a fault a system cannot be put through (a stall of a process system's client) leaves
// that cell blank, as a scenario of another topology does, instead of refusing the whole matrix.
func TestMatrixLeavesBlankWhatASystemCannotRun(t *testing.T) {
	t.Parallel()
	// A process system of its own (the plan never starts its command), so the test does not need
	// bin/tenure-instance built.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, sim.SystemFileName),
		[]byte(`{"name": "p", "kind": "lease", "command": ["sh"], "capabilities": {"beliefs": true}}`), 0o644))
	f := matrixFlags{systems: "reference,exec:" + dir, scenarios: "stall-past-ttl,crash-failover"}
	f.run.redis, f.run.parallel, f.run.out, f.seeds = "server", 1, filepath.Join(t.TempDir(), "m"), 1 // planned only
	cells, jobs, _, err := planMatrix(&f)
	require.NoError(t, err)
	var got []string
	for _, c := range cells {
		got = append(got, c.system+"/"+c.scenario)
	}
	require.ElementsMatch(t, []string{"reference/stall-past-ttl", "reference/crash-failover", "exec:" + dir + "/crash-failover"}, got)
	require.Len(t, jobs, 3)
}

// noHoldingSurvivedTheWipe says why a run's wipe left nothing to show a missing wipe guard with: every
// wiping fault found no instance believing it held an endpoint from before the fault's start to past
// its end. It returns "" when some holding did survive a wipe (the flaw had its chance).
func noHoldingSurvivedTheWipe(t *testing.T, path string) string {
	t.Helper()
	h, err := history.ReadFile(path)
	require.NoError(t, err)
	type holding struct{ instance, endpoint string }
	var wipes []history.Event
	for _, e := range h.Events {
		if e.Kind == history.KindFault && e.Fault.Wipes && e.Fault.Err == "" {
			wipes = append(wipes, e)
		}
	}
	if len(wipes) == 0 {
		return ""
	}
	var ends []string
	for _, w := range wipes {
		since := map[holding]time.Duration{} // beliefs held, from when
		survived := false
		for _, e := range h.Events {
			if e.Kind != history.KindBelief || e.At > w.End {
				continue
			}
			k := holding{e.Instance, e.Endpoint}
			if e.Belief.Held {
				if _, ok := since[k]; !ok {
					since[k] = e.At
				}
			} else {
				delete(since, k)
			}
		}
		for _, from := range since {
			survived = survived || from < w.At
		}
		if survived {
			return ""
		}
		ends = append(ends, fmt.Sprintf("the restart at %v lasted %v and no holder still believed at its end",
			w.At.Round(time.Millisecond), (w.End-w.At).Round(time.Millisecond)))
	}
	return strings.Join(ends, "; ")
}

// A matrix run's directory names hold only what CI artifact uploaders accept: a process system's
// exec:PATH loses its colon and slashes.
func TestMatrixDirectoryNamesAreArtifactSafe(t *testing.T) {
	for in, want := range map[string]string{
		"reference":                   "reference",
		"exec:examples/redis-py-lock": "exec_examples_redis-py-lock",
		"exec:/abs/path/system.json":  "exec__abs_path_system.json",
		`exec:C:\x\y`:                 "exec_C__x_y",
		"redsync-setnx-extend":        "redsync-setnx-extend",
		"exec:../up/one":              "exec_.._up_one",
	} {
		got := pathSafe(in)
		require.Equal(t, want, got, in)
		require.NotContains(t, got, ":")
		require.NotContains(t, got, "/")
	}
}
