package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/lagtest"
)

// writeLog writes an inconclusive log of these lines and returns its path.
func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "unit-inconclusive.txt")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

// fakeRun is a runner that answers from a table keyed by package and pattern: what the test prints,
// whether go test exits 0, and a line it logs as inconclusive again. It records its calls.
type fakeRun struct {
	answers map[string]fakeAnswer
	calls   []string
}

type fakeAnswer struct {
	out   string
	ok    bool
	again string
}

func (f *fakeRun) run(pkg, pattern, log string) ([]byte, bool, error) {
	f.calls = append(f.calls, pkg+" "+pattern)
	a := f.answers[pkg+" "+pattern]
	if a.again != "" {
		if err := os.WriteFile(log, []byte(a.again+"\n"), 0o644); err != nil {
			return nil, false, err
		}
	}
	return []byte(a.out), a.ok, nil
}

func TestRunPatternEscapesEachLevel(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"TestX":             `^TestX$`,
		"TestX/case":        `^TestX$/^case$`,
		"TestX/a.b+c":       `^TestX$/^a\.b\+c$`,
		"TestX/(x|y)/[z]*":  `^TestX$/^\(x\|y\)$/^\[z\]\*$`,
		"TestX/case#01":     `^TestX$/^case#01$`,
		"TestX/a_b/^$?{1}.": `^TestX$/^a_b$/^\^\$\?\{1\}\.$`,
	} {
		require.Equal(t, want, runPattern(name), name)
	}
}

// The pattern runs exactly the test it names, through go test itself: a subtest whose name holds
// regexp metacharacters, slashes or a duplicate's #01, and not its siblings.
func TestRunPatternSelectsExactlyTheTest(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(`package x

import "testing"

func TestMeta(t *testing.T) {
	for _, n := range []string{"a.b", "axb", "a.b", "(x|y)", "x", "[z]/w", "z"} {
		t.Run(n, func(t *testing.T) {})
	}
}

func TestMetaToo(t *testing.T) {}
`), 0o644))
	passed := func(name string) []string {
		cmd := exec.Command(goCmd, goTest{goCmd: goCmd, timeout: "2m"}.args(".", runPattern(name))...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		var names []string
		for _, m := range regexp.MustCompile(`(?m)^\s*--- PASS: (\S+) \(`).FindAllSubmatch(out, -1) {
			names = append(names, string(m[1]))
		}
		require.True(t, passLine(out, name), "%s", out)
		return names
	}
	require.ElementsMatch(t, []string{"TestMeta", "TestMeta/a.b"}, passed("TestMeta/a.b"))
	require.ElementsMatch(t, []string{"TestMeta", "TestMeta/a.b#01"}, passed("TestMeta/a.b#01"))
	require.ElementsMatch(t, []string{"TestMeta", "TestMeta/(x|y)"}, passed("TestMeta/(x|y)"))
	require.ElementsMatch(t, []string{"TestMeta", "TestMeta/[z]/w"}, passed("TestMeta/[z]/w"))
	require.Len(t, passed("TestMeta"), 8, "the parent and its seven subtests, not TestMetaToo")
}

// Lines are grouped by test; a subtest whose parent is listed runs with it; what does not parse is
// kept apart.
func TestTargetsGroupByTest(t *testing.T) {
	t.Parallel()
	ts, bad := targets([]string{
		"./election TestA/redis: INCONCLUSIVE: one",
		"./election TestB: INCONCLUSIVE: two",
		"./election TestB/sub: INCONCLUSIVE: three",
		"./sim TestA/redis: INCONCLUSIVE: another package",
		"TestOld: INCONCLUSIVE: a line without its package",
		"",
	})
	require.Equal(t, []string{"TestOld: INCONCLUSIVE: a line without its package"}, bad)
	require.Len(t, ts, 3)
	require.Equal(t, [2]string{"./election", "TestA/redis"}, [2]string{ts[0].pkg, ts[0].test})
	require.Equal(t, [2]string{"./election", "TestB"}, [2]string{ts[1].pkg, ts[1].test})
	require.Len(t, ts[1].first, 2, "TestB/sub runs with TestB")
	require.Equal(t, [2]string{"./sim", "TestA/redis"}, [2]string{ts[2].pkg, ts[2].test})
}

// An inconclusive test is never a pass: it passes only when its re-run passes; still inconclusive, not
// judged (skipped) or not runnable, make unit exits 3 saying the machine was too loaded; failing on its
// re-run, 1.
func TestRerunAll(t *testing.T) {
	t.Parallel()
	first := "./election TestA/redis: INCONCLUSIVE: the standby never saw the leader lead, but the machine was too loaded to judge it: Redis's answer to a ping ran 350ms late"
	pass := fakeAnswer{out: "=== RUN   TestA/redis\n    --- PASS: TestA/redis (1.20s)\n", ok: true}

	t.Run("nothing inconclusive", func(t *testing.T) {
		var out bytes.Buffer
		f := &fakeRun{}
		require.Equal(t, 0, rerunAll(filepath.Join(t.TempDir(), "none.txt"), 0, f.run, &out))
		require.Equal(t, 1, rerunAll(filepath.Join(t.TempDir(), "none.txt"), 1, f.run, &out))
		require.Equal(t, 0, rerunAll(writeLog(t), 0, f.run, &out), "an empty log")
		require.Empty(t, f.calls)
		require.Empty(t, out.String())
	})
	t.Run("the package run failed", func(t *testing.T) {
		var out bytes.Buffer
		f := &fakeRun{}
		require.Equal(t, 1, rerunAll(writeLog(t, first), 1, f.run, &out))
		require.Empty(t, f.calls, "a failure is what needs fixing")
		require.Contains(t, out.String(), "make unit: 1 test(s) INCONCLUSIVE")
		require.Contains(t, out.String(), "  "+first+"\n")
		require.Contains(t, out.String(), "not running them again")
	})
	t.Run("passes on its re-run", func(t *testing.T) {
		var out bytes.Buffer
		f := &fakeRun{answers: map[string]fakeAnswer{"./election ^TestA$/^redis$": pass}}
		require.Equal(t, 0, rerunAll(writeLog(t, first), 0, f.run, &out))
		require.Equal(t, []string{"./election ^TestA$/^redis$"}, f.calls)
		require.Contains(t, out.String(), "PASS ./election TestA/redis (-run '^TestA$/^redis$') on its re-run; its first attempt was INCONCLUSIVE:\n    "+first+"\n",
			"the first attempt's lag line is printed")
		require.Contains(t, out.String(), "make unit: each of the 1 inconclusive test(s) passed on its re-run")
	})
	t.Run("still inconclusive", func(t *testing.T) {
		var out bytes.Buffer
		again := "./election TestA/redis: INCONCLUSIVE: late again"
		f := &fakeRun{answers: map[string]fakeAnswer{"./election ^TestA$/^redis$": {out: "--- SKIP: TestA/redis", ok: true, again: again}}}
		log := writeLog(t, first)
		require.Equal(t, 3, rerunAll(log, 0, f.run, &out))
		require.Contains(t, out.String(), "INCONCLUSIVE again ./election TestA/redis")
		require.Contains(t, out.String(), "make unit: INCONCLUSIVE: nothing was violated, but the machine was too loaded to judge 1 package test(s)")
		require.Contains(t, out.String(), "Run it again on a quieter machine.")
		b, err := os.ReadFile(strings.TrimSuffix(log, ".txt") + "-rerun.txt")
		require.NoError(t, err)
		require.Equal(t, again+"\n", string(b), "the re-run's lines are kept")
	})
	t.Run("fails on its re-run", func(t *testing.T) {
		var out bytes.Buffer
		f := &fakeRun{answers: map[string]fakeAnswer{
			"./election ^TestA$/^redis$": {out: "--- FAIL: TestA/redis\n    two leaders", ok: false},
			"./sim ^TestB$":              pass,
		}}
		require.Equal(t, 1, rerunAll(writeLog(t, first, "./sim TestB: INCONCLUSIVE: x"), 0, f.run, &out))
		require.Contains(t, out.String(), "FAIL ./election TestA/redis (-run '^TestA$/^redis$') on its re-run")
		require.Contains(t, out.String(), "    two leaders\n", "its output is shown")
		require.Contains(t, out.String(), "make unit: FAILED: 1 test(s)")
	})
	t.Run("not judged on its re-run", func(t *testing.T) {
		for _, a := range []fakeAnswer{
			{out: "--- SKIP: TestA/redis (0.00s)\n    no redis-server", ok: true},
			{out: "testing: warning: no tests to run\nPASS", ok: true},
		} {
			var out bytes.Buffer
			f := &fakeRun{answers: map[string]fakeAnswer{"./election ^TestA$/^redis$": a}}
			require.Equal(t, 3, rerunAll(writeLog(t, first), 0, f.run, &out), a.out)
			require.Contains(t, out.String(), "NOT JUDGED ./election TestA/redis")
		}
	})
	t.Run("a line that does not say how to run it again", func(t *testing.T) {
		var out bytes.Buffer
		f := &fakeRun{}
		require.Equal(t, 3, rerunAll(writeLog(t, "TestOld: INCONCLUSIVE: x"), 0, f.run, &out))
		require.Contains(t, out.String(), "cannot run it again (the line does not name its package and test): TestOld")
	})
}

// Through a go command: a fake one that records its arguments and environment and answers per pattern,
// as go test would.
func TestRerunAllRunsGoTest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls.txt")
	fake := filepath.Join(dir, "go")
	require.NoError(t, os.WriteFile(fake, []byte(`#!/bin/sh
echo "$* | log=${`+lagtest.LogEnv+`:+set}" >> "`+calls+`"
case "$7" in
'^TestPass$/^a\.b$') echo "    --- PASS: TestPass/a.b (0.01s)" ;;
'^TestStill$') echo "./p TestStill: INCONCLUSIVE: late again" >> "$`+lagtest.LogEnv+`"; echo "--- SKIP: TestStill (0.01s)" ;;
*) echo "--- FAIL: $7"; exit 1 ;;
esac
`), 0o755))
	g := goTest{goCmd: fake, timeout: "12m"}

	var out bytes.Buffer
	log := writeLog(t, "./p TestPass/a.b: INCONCLUSIVE: first", "./p TestStill: INCONCLUSIVE: first")
	require.Equal(t, 3, rerunAll(log, 0, g.run, &out), out.String())
	b, err := os.ReadFile(calls)
	require.NoError(t, err)
	require.Equal(t, "test -count=1 -v -timeout 12m -run ^TestPass$/^a\\.b$ ./p | log=set\n"+
		"test -count=1 -v -timeout 12m -run ^TestStill$ ./p | log=set\n", string(b))
	require.Contains(t, out.String(), "PASS ./p TestPass/a.b")
	require.Contains(t, out.String(), "INCONCLUSIVE again ./p TestStill")

	out.Reset()
	require.Equal(t, 1, rerunAll(writeLog(t, "./p TestOther: INCONCLUSIVE: first"), 0, g.run, &out))
	require.Contains(t, out.String(), "FAIL ./p TestOther")

	out.Reset()
	gone := goTest{goCmd: filepath.Join(dir, "no-such-go"), timeout: "12m"}
	require.Equal(t, 3, rerunAll(writeLog(t, "./p TestPass/a.b: INCONCLUSIVE: first"), 0, gone.run, &out))
	require.Contains(t, out.String(), "cannot run it again")
}

// make unit itself, with a go command whose package run passes but lists one test as inconclusive, as
// a loaded machine leaves it: the target fails, saying the machine was too loaded to judge it, when the
// test is inconclusive on its re-run too, and passes, saying so, when the re-run passes. (go run, which
// builds this command, is the real go's.)
func TestMakeUnitFailsOnAStillInconclusiveTest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds internal/unitrerun")
	}
	makeCmd, err1 := exec.LookPath("make")
	goCmd, err2 := exec.LookPath("go")
	if err1 != nil || err2 != nil {
		t.Skip("needs make and go")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "Makefile"))
	dir := t.TempDir()
	fake := filepath.Join(dir, "go")
	require.NoError(t, os.WriteFile(fake, []byte(`#!/bin/sh
if [ "$1" != test ]; then exec "`+goCmd+`" "$@"; fi
case "$*" in
*" ./...")
	echo "./internal/x TestLate/redis: INCONCLUSIVE: first attempt, Redis's answer to a ping ran 300ms late" >> "$`+lagtest.LogEnv+`"
	echo "ok  	./internal/x" ;;
*)
	if [ -n "$AGAIN" ]; then
		echo "./internal/x TestLate/redis: INCONCLUSIVE: again" >> "$`+lagtest.LogEnv+`"
		echo "    --- SKIP: TestLate/redis (0.30s)"
	else
		echo "    --- PASS: TestLate/redis (0.30s)"
	fi ;;
esac
`), 0o755))
	unit := func(again bool) (int, string) {
		cmd := exec.Command(makeCmd, "--no-print-directory", "unit", "GO="+fake, "UNIT_INCONCLUSIVE="+filepath.Join(dir, "unit-inconclusive.txt"))
		cmd.Dir = root
		var env []string
		for _, e := range os.Environ() {
			if name, _, _ := strings.Cut(e, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" && name != lagtest.LogEnv {
				env = append(env, e)
			}
		}
		if again {
			env = append(env, "AGAIN=1")
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); err != nil {
			require.ErrorAs(t, err, &ee, "%s", out)
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	code, out := unit(true)
	require.NotEqual(t, 0, code, "an inconclusive test is no pass:\n%s", out)
	require.Contains(t, out, "make unit: 1 test(s) INCONCLUSIVE")
	require.Contains(t, out, "INCONCLUSIVE again ./internal/x TestLate/redis")
	require.Contains(t, out, "the machine was too loaded to judge 1 package test(s)")

	code, out = unit(false)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "PASS ./internal/x TestLate/redis (-run '^TestLate$/^redis$') on its re-run; its first attempt was INCONCLUSIVE:\n"+
		"    ./internal/x TestLate/redis: INCONCLUSIVE: first attempt, Redis's answer to a ping ran 300ms late\n")
}

// A test behind a build tag (make mutants' tests) is run again with its tag: without it, go test would
// match nothing, and the re-run would prove nothing.
func TestRerunPassesTheBuildTag(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.21\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("//go:build tagx\n\npackage x\n\nimport \"testing\"\n\nfunc TestTagged(t *testing.T) {}\n"), 0o644))
	run := func(tags string) []byte {
		cmd := exec.Command(goCmd, goTest{goCmd: goCmd, timeout: "2m", tags: tags}.args(".", runPattern("TestTagged"))...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		out, _ := cmd.CombinedOutput()
		return out
	}
	require.True(t, passLine(run("tagx"), "TestTagged"))
	require.False(t, passLine(run(""), "TestTagged"))
}
