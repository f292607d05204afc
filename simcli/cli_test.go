package simcli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/simcli"
)

// A typo gets the closest names and a bad flag one line naming it and the fix: no usage dump.
func TestTyposGetOneLineWithASuggestion(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"scenario":        {[]string{"run", "crash-failovr"}, `unknown scenario "crash-failovr": did you mean crash-failover?`},
		"bench":           {[]string{"bench", "redis-partiton"}, "did you mean redis-partition"},
		"system":          {[]string{"run", "crash-failover", "--system", "refrence"}, `unknown system "refrence": did you mean reference?`},
		"suite":           {[]string{"run", "--suite", "quik"}, `unknown suite "quik": did you mean quick?`},
		"flag":            {[]string{"run", "crash-failover", "--sed", "7"}, "unknown flag --sed for run: did you mean --seed?"},
		"flag value":      {[]string{"run", "crash-failover", "--instances", "x"}, `--instances "x": want a whole number of at least 1`},
		"negative seed":   {[]string{"run", "crash-failover", "--seed", "-5"}, `--seed "-5": want a whole number of at least 0`},
		"int flag":        {[]string{"run", "--suite", "ci", "--parallel", "abc"}, "--parallel \"abc\": want a whole number, got"},
		"duration flag":   {[]string{"run", "--suite", "soak", "--duration", "5"}, "want a duration such as 90s"},
		"switch value":    {[]string{"run", "crash-failover", "--quiet=maybe"}, "--quiet=maybe: a switch is given alone (--quiet)"},
		"missing value":   {[]string{"run", "crash-failover", "--seed"}, "--seed needs a value"},
		"command":         {[]string{"rn"}, "did you mean run?"},
		"backend":         {[]string{"run", "crash-failover", "--redis", "servr"}, `unknown backend --redis "servr": did you mean server?`},
		"matrix system":   {[]string{"matrix", "--systems", "reference,refrence"}, `--systems: unknown system "refrence": did you mean reference?`},
		"matrix scenario": {[]string{"matrix", "--scenarios", "gc-pase"}, `--scenarios: unknown scenario "gc-pase": did you mean gc-pause?`},
		"matrix backend":  {[]string{"matrix", "--redis", "embeded"}, "did you mean embedded?"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{tc.args[0], "--out", out}, tc.args[1:]...)
			code, stdout, stderr := run(t, args...)
			require.Equal(t, simcli.ExitUsage, code, stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			require.True(t, strings.HasPrefix(stderr, "simrun: "), stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr, "Usage")
			require.Less(t, len(stderr), 200, "at most one line of alternatives: %q", stderr)
		})
	}
}

// Every command's --help goes to stdout and exits 0.
func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"list", "--help"}, {"run", "--help"}, {"run", "-h"}, {"report", "--help"}, {"bench", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, args...)
			require.Equal(t, simcli.ExitOK, code, stderr)
			require.Empty(t, stderr)
			require.Contains(t, stdout, "simrun")
		})
	}
	_, stdout, _ := run(t, "run", "--help")
	for _, f := range []string{"--seed VALUE", "--redis VALUE", "--duration VALUE", "--quiet"} {
		require.Contains(t, stdout, f)
	}
}

// simrun help COMMAND prints that command's own help, as COMMAND --help does.
func TestHelpCommandPrintsThatCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"list", "run", "report", "bench", "matrix"} {
		t.Run(cmd, func(t *testing.T) {
			code, stdout, stderr := run(t, "help", cmd)
			require.Equal(t, simcli.ExitOK, code, stderr)
			_, want, _ := run(t, cmd, "--help")
			require.Equal(t, want, stdout)
			_, general, _ := run(t, "help")
			require.NotEqual(t, general, stdout)
		})
	}
}

// run --help names every registered suite.
func TestRunHelpListsEverySuite(t *testing.T) {
	t.Parallel()
	_, stdout, _ := run(t, "run", "--help")
	var line string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, "--suite VALUE") {
			line = l
		}
	}
	require.NotEmpty(t, line, stdout)
	for _, su := range scenarios.Suites() {
		require.Contains(t, line, su.Name)
	}
}

// simrun list gives each system its kind and a description.
func TestListShowsEachSystemsKindAndDescription(t *testing.T) {
	t.Parallel()
	_, stdout, _ := run(t, "list")
	lines := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	for _, name := range sim.Systems() {
		sys, err := sim.Lookup(name)
		require.NoError(t, err)
		d, ok := sys.(sim.Describer)
		require.True(t, ok, "%s has no description", name)
		kind := "lease"
		if k, ok := sys.(sim.KindReporter); ok {
			kind = k.Kind()
		}
		require.Regexp(t, `^`+name+`\s+`+kind+`\b.*\s`+regexp.QuoteMeta(d.Description())+`$`, lines[name])
	}
}

// A time scale too small for the system's timing is refused in one line, not once per instance.
func TestTooSmallTimeScaleIsSaidOnce(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := run(t, "run", "balance-3x9", "--time-scale", "0.001", "--redis", "embedded", "--quiet", "--out", out)
	require.Equal(t, simcli.ExitUsage, code, stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	require.Equal(t, 1, strings.Count(stderr, "must be less than RenewInterval"), stderr)
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "nothing ran: nothing is left")
}

// Flags that mean nothing for what is run are refused, not ignored.
func TestFlagsThatDoNotApplyAreRefused(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"duration without soak":  {[]string{"run", "crash-failover", "--duration", "1m"}, "--duration applies only to --suite soak"},
		"duration on a suite":    {[]string{"run", "--suite", "quick", "--duration", "1m"}, "--duration applies only to --suite soak"},
		"parallel of one":        {[]string{"run", "crash-failover", "--parallel", "2"}, "--parallel applies to runs of several scenarios"},
		"postgres without pg":    {[]string{"run", "crash-failover", "--postgres", "postgres://x@127.0.0.1/y"}, "--postgres applies only to scenarios on PostgreSQL"},
		"bench postgres":         {[]string{"bench", "crash-failover", "--postgres", "postgres://x@127.0.0.1/y"}, "--postgres applies only"},
		"list takes no argument": {[]string{"list", "crash-failover"}, "takes no arguments"},
	} {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if args[0] != "list" {
				args = append(args, "--out", out)
			}
			code, _, stderr := run(t, args...)
			require.Equal(t, simcli.ExitUsage, code, stderr)
			require.Contains(t, stderr, tc.want)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err))
		})
	}
}

// report re-renders a suite directory: every run its marker names, and the index. history.jsonl is
// never rewritten, neither of a run nor of a suite's runs, and a directory under the suite that its
// marker does not name is left alone, even when it holds a run.
func TestReportOfASuiteDirectoryKeepsTheHistories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	var saved [][]byte
	subs := []string{"naive-redis-partition", "reference-redis-partition"}
	for _, d := range subs {
		b, err := os.ReadFile(filepath.Join("testdata", d, "history.jsonl"))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
		p := filepath.Join(dir, d, "history.jsonl")
		require.NoError(t, os.WriteFile(p, b, 0o444))
		require.NoError(t, os.Chtimes(p, old, old))
		saved = append(saved, b)
	}
	require.NoError(t, reports.WriteMarker(dir, reports.Marker{Kind: reports.KindSuite, Runs: subs}))
	stranger := filepath.Join(dir, "not-listed")
	require.NoError(t, os.MkdirAll(stranger, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stranger, "history.jsonl"), saved[0], 0o644))
	before := snapshot(t, stranger)

	code, stdout, stderr := run(t, "report", dir)
	require.Equal(t, simcli.ExitViolated, code, stdout+stderr)
	require.Contains(t, stdout, "1 passed, 1 failed")
	require.Contains(t, stdout, "index: "+filepath.Join(dir, "index.html"))
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	for i, d := range subs {
		require.FileExists(t, filepath.Join(dir, d, "report.html"))
		require.Contains(t, string(index), d+"/report.html")
		p := filepath.Join(dir, d, "history.jsonl")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, saved[i], b)
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.True(t, st.ModTime().Equal(old), "history.jsonl of %s was rewritten", d)
	}
	require.NotContains(t, string(index), "not-listed")
	require.Equal(t, before, snapshot(t, stranger), "a directory the suite does not name is left alone")
	// One run's directory: the same.
	code, stdout, stderr = run(t, "report", filepath.Join(dir, subs[1]))
	require.Equal(t, simcli.ExitOK, code, stdout+stderr)
	st, err := os.Stat(filepath.Join(dir, subs[1], "history.jsonl"))
	require.NoError(t, err)
	require.True(t, st.ModTime().Equal(old), "history.jsonl was rewritten")
}

// A run stopped by Ctrl-C (its context) is reported as interrupted, with exit status 130, and the
// scenarios that had not started are listed as not run: neither is a failure.
func TestInterruptedRunIsNotAFailedOne(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "out")
	// Interrupt once the first scenario's instances are running (they have logged), as Ctrl-C would.
	go func() {
		for ctx.Err() == nil {
			if st, err := os.Stat(filepath.Join(dir, "single-instance", "instances.log")); err == nil && st.Size() > 0 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	out := &bytes.Buffer{}
	code := simcli.Main(ctx, []string{"run", "single-instance", "balance-3x9", "--seed", "1", "--redis", "embedded", "--quiet", "--out", dir}, out, &errb)
	stdout := out.String()
	require.Equal(t, simcli.ExitInterrupted, code, stdout+errb.String())
	require.Regexp(t, `single-instance\s+INTERRUPTED`, stdout)
	require.Regexp(t, `balance-3x9\s+not run`, stdout)
	require.Contains(t, stdout, "0 passed, 0 failed, 1 interrupted, 1 not run")
	require.NotContains(t, stdout, "FAIL")
	require.Contains(t, errb.String(), "simrun: interrupted")
}

// The header names the backend auto chose, and the replay command names it and the binary that ran,
// so a custom simrun replays with itself.
func TestReplayNamesTheBinaryAndTheBackendThatRan(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	bin := buildSimrun(t)
	custom := filepath.Join(t.TempDir(), "my-simrun")
	require.NoError(t, os.Link(bin, custom))
	dir := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(custom, "run", "single-instance", "--seed", "1", "--redis", "auto", "--time-scale", "0.05", "--quiet", "--out", dir)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	require.Contains(t, string(b), "backend server,")
	require.Contains(t, string(b), "replay: "+custom+" run single-instance --seed 1 --time-scale 0.05 --system reference --redis server)")
}

// A relative TMPDIR and --out work: the private redis-server is given absolute paths.
func TestRelativeTMPDIRAndOut(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	bin := buildSimrun(t)
	wd := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(wd, "tmp"), 0o755))
	cmd := exec.Command(bin, "run", "single-instance", "--seed", "1", "--redis", "server", "--time-scale", "0.05", "--quiet", "--out", "rel-out")
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "TMPDIR=tmp")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	require.FileExists(t, filepath.Join(wd, "rel-out", "report.html"))
}

// An external Redis that does not answer is one error, without go-redis's pool log lines.
func TestUnreachableRedisPrintsNoPoolLogs(t *testing.T) {
	t.Parallel()
	bin := buildSimrun(t)
	dir := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "run", "single-instance", "--seed", "1", "--redis", "addr=127.0.0.1:1", "--quiet", "--out", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, simcli.ExitUsage, ee.ExitCode())
	require.NotContains(t, stdout.String()+stderr.String(), "pool.go")
	require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
	require.Contains(t, stderr.String(), "simrun: single-instance: sim: backend external Redis at 127.0.0.1:1 does not answer")
	require.NotContains(t, stdout.String(), "ERROR", "a single scenario's error is said once")
}
