// Command unitrerun is the end of `make unit`: it takes the package tests the run listed as inconclusive
// (internal/lagtest: a timing premise that failed while the test's own lag was above what it
// tolerates) and runs each once more, as `make suite` re-runs an inconclusive scenario. An inconclusive
// test is never a pass: one that passes on its re-run is reported as such, with its first attempt's
// line; one still inconclusive makes `make unit` fail saying the machine was too loaded to judge it, and
// one that fails on its re-run makes it fail.
//
//	go run ./internal/unitrerun -go go -first-exit $code simrun-out/unit-inconclusive.txt
//
// Each test is run alone in its package, with the same TENURE_INCONCLUSIVE_LOG mechanism:
//
//	go test -count=1 -timeout 12m -run '^TestX$/^case$' ./pkg
//
// A subtest is run by its exact name, level by level, each level anchored and its regexp
// metacharacters escaped (go test splits -run at unbracketed slashes and matches each level of a test's
// name on its own). Its parent's function runs too, skipping its other subtests.
//
// Exit status: the package run's (-first-exit) when it failed (its inconclusive tests are listed, not
// run again: the failure is what needs fixing); else 0 when nothing was inconclusive or every
// inconclusive test passed on its re-run, 1 when one failed on its re-run, 3 when none failed but one is
// still inconclusive (or its line does not say how to run it again).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tenurelabs/tenure/internal/lagtest"
)

// Exit statuses, as simrun's.
const (
	exitOK           = 0
	exitFailed       = 1
	exitInconclusive = 3
)

func main() {
	goCmd := flag.String("go", "go", "the go command")
	first := flag.Int("first-exit", 0, "the exit status of the package run that wrote the log")
	timeout := flag.String("timeout", "12m", "go test's -timeout for each re-run")
	tags := flag.String("tags", "", "go test's -tags for each re-run (make mutants: the tag that adds the mutants)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: unitrerun [-go GO] [-first-exit N] [-timeout D] [-tags T] LOG")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	r := goTest{goCmd: *goCmd, timeout: *timeout, tags: *tags}
	os.Exit(rerunAll(flag.Arg(0), *first, r.run, os.Stdout))
}

// runner runs verbosely the tests of pkg that pattern selects, once, with TENURE_INCONCLUSIVE_LOG set to
// log, and returns what they printed and whether go test exited 0 (which a skipped test, or a pattern
// that matched nothing, does too: rerunAll looks for the test's own "--- PASS" line).
type runner func(pkg, pattern, log string) (output []byte, ok bool, err error)

// goTest runs go test.
type goTest struct{ goCmd, timeout, tags string }

func (g goTest) args(pkg, pattern string) []string {
	args := []string{"test", "-count=1", "-v", "-timeout", g.timeout}
	if g.tags != "" {
		args = append(args, "-tags", g.tags)
	}
	return append(args, "-run", pattern, pkg)
}

func (g goTest) run(pkg, pattern, log string) ([]byte, bool, error) {
	cmd := exec.Command(g.goCmd, g.args(pkg, pattern)...)
	cmd.Env = append(os.Environ(), lagtest.LogEnv+"="+log) // the last of a name wins
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out, false, nil // the tests ran and failed (or did not build)
	}
	return out, err == nil, err
}

// passLine finds the line go test -v ends a test that passed with.
func passLine(out []byte, name string) bool {
	return regexp.MustCompile(`(?m)^\s*--- PASS: ` + regexp.QuoteMeta(name) + ` \(`).Match(out)
}

// runPattern is the -run pattern that selects exactly the test named name (t.Name()), a subtest by
// each level of its name.
func runPattern(name string) string {
	levels := strings.Split(name, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}

// target is one test to run again and the lines it left the first time.
type target struct {
	pkg, test string
	first     []lagtest.Line
}

// targets groups the log's lines by test, in the order first seen; a subtest whose parent is listed too
// runs with its parent. Lines that do not parse are returned apart.
func targets(lines []string) ([]target, []string) {
	var ts []target
	var bad []string
	at := map[[2]string]int{}
	var parsed []lagtest.Line
	for _, s := range lines {
		if strings.TrimSpace(s) == "" {
			continue
		}
		l, ok := lagtest.ParseLine(s)
		if !ok {
			bad = append(bad, s)
			continue
		}
		parsed = append(parsed, l)
	}
	listed := map[[2]string]bool{}
	for _, l := range parsed {
		listed[[2]string{l.Package, l.Test}] = true
	}
	for _, l := range parsed {
		name := l.Test
		for parent := name; strings.Contains(parent, "/"); {
			parent = parent[:strings.LastIndex(parent, "/")]
			if listed[[2]string{l.Package, parent}] {
				name = parent
			}
		}
		key := [2]string{l.Package, name}
		k, ok := at[key]
		if !ok {
			k = len(ts)
			at[key] = k
			ts = append(ts, target{pkg: l.Package, test: name})
		}
		ts[k].first = append(ts[k].first, l)
	}
	return ts, bad
}

// rerunAll reads the log the package run wrote, prints what it lists and runs each test once more with
// run, printing what became of it, and returns the exit status of `make unit`.
func rerunAll(logPath string, firstExit int, run runner, w io.Writer) int {
	b, err := os.ReadFile(logPath)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(bytes.TrimSpace(b)) == 0) {
		return firstExit // nothing was inconclusive
	}
	if err != nil {
		fmt.Fprintf(w, "make unit: reading the inconclusive tests: %v\n", err)
		return max(firstExit, exitFailed)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines = append(lines, sc.Text())
		}
	}
	fmt.Fprintf(w, "make unit: %d test(s) INCONCLUSIVE: their timing premise failed while the machine ran\n", len(lines))
	fmt.Fprintf(w, "  too late to judge it (nothing they can judge was violated; %s):\n", logPath)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if firstExit != 0 {
		fmt.Fprintf(w, "make unit: not running them again: the package tests failed (exit %d); an inconclusive test is no pass either\n", firstExit)
		return firstExit
	}

	ts, bad := targets(lines)
	again := strings.TrimSuffix(logPath, filepath.Ext(logPath)) + "-rerun" + filepath.Ext(logPath)
	_ = os.Remove(again)
	fmt.Fprintf(w, "make unit: running each once more, alone (go test -count=1 -run PATTERN PKG): an inconclusive test is no pass\n")
	var passed, failed, still []string
	for _, t := range ts {
		pattern := runPattern(t.test)
		what := fmt.Sprintf("%s %s (-run '%s')", t.pkg, t.test, pattern)
		tmp, err := os.CreateTemp("", "unit-inconclusive-rerun-*.txt")
		if err != nil {
			fmt.Fprintf(w, "  %s: cannot run it again: %v\n", what, err)
			still = append(still, what)
			continue
		}
		_ = tmp.Close()
		_ = os.Remove(tmp.Name()) // the test creates it when it is inconclusive again
		out, ok, err := run(t.pkg, pattern, tmp.Name())
		relog, _ := os.ReadFile(tmp.Name())
		_ = os.Remove(tmp.Name())
		relog = bytes.TrimSpace(relog)
		switch {
		case err != nil:
			fmt.Fprintf(w, "  %s: cannot run it again: %v\n", what, err)
			still = append(still, what)
		case !ok:
			fmt.Fprintf(w, "  FAIL %s on its re-run (its first attempt was inconclusive):\n%s", what, indent(out))
			failed = append(failed, what)
		case len(relog) > 0:
			fmt.Fprintf(w, "  INCONCLUSIVE again %s:\n%s", what, indent(relog))
			appendFile(again, append(relog, '\n'))
			still = append(still, what)
		case !passLine(out, t.test):
			fmt.Fprintf(w, "  NOT JUDGED %s on its re-run: it did not pass (skipped, or no test matched):\n%s", what, indent(out))
			still = append(still, what)
		default:
			fmt.Fprintf(w, "  PASS %s on its re-run; its first attempt was INCONCLUSIVE:\n", what)
			for _, l := range t.first {
				fmt.Fprintf(w, "    %s\n", l)
			}
			passed = append(passed, what)
		}
	}
	for _, l := range bad {
		fmt.Fprintf(w, "  cannot run it again (the line does not name its package and test): %s\n", l)
		still = append(still, l)
	}

	switch {
	case len(failed) > 0:
		fmt.Fprintf(w, "make unit: FAILED: %d test(s) inconclusive at first failed on their re-run (output above):\n", len(failed))
		for _, f := range failed {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if len(still) > 0 {
			fmt.Fprintf(w, "  and %d still inconclusive: the machine was too loaded to judge them\n", len(still))
		}
		return exitFailed
	case len(still) > 0:
		fmt.Fprintf(w, "make unit: INCONCLUSIVE: nothing was violated, but the machine was too loaded to judge %d package test(s)\n", len(still))
		fmt.Fprintf(w, "  (the test's own lag exceeded what its timing premise tolerates, even on a re-run; %s):\n", again)
		for _, s := range still {
			fmt.Fprintf(w, "  %s\n", s)
		}
		fmt.Fprintln(w, "  Run it again on a quieter machine.")
		return exitInconclusive
	}
	fmt.Fprintf(w, "make unit: each of the %d inconclusive test(s) passed on its re-run\n", len(passed))
	return exitOK
}

func indent(b []byte) string {
	var out strings.Builder
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		out.WriteString("    " + l + "\n")
	}
	return out.String()
}

func appendFile(path string, b []byte) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(b)
}
