// Package lagtest lets a package test tell a starved machine from a broken system, as the harness does for
// a scenario (docs/architecture.md, "A starved harness"): a Watch measures, through the test, how late
// the test process itself runs (a canary timer) and how long the backend takes to answer the test's own
// pings. A test whose timing premise failed (a healthy leader kept its place, a takeover came within its
// bound) calls Excuse before failing: when the watch saw more lag than that premise can absorb, the test
// is skipped as INCONCLUSIVE with the lag instead of failed. A test never routes a safety assertion (two
// leaders, a stale write) through it: a system must be safe on a slow machine.
//
// Inconclusive tests are counted, not hidden, and never passed: when TENURE_INCONCLUSIVE_LOG names a file,
// each one appends a line to it naming its package and itself (Line), and `make unit` prints them, runs
// each once more (internal/unitrerun) and fails when one is still inconclusive.
package lagtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// LogEnv names the file inconclusive tests append their line to.
const LogEnv = "TENURE_INCONCLUSIVE_LOG"

const (
	// canaryPeriod is how often the canary wakes: a stall of more than a few milliseconds cannot fall
	// between two wakes.
	canaryPeriod = 5 * time.Millisecond
	// pingEvery is the pause between two pings of one backend; pingTimeout bounds one (a backend that
	// does not answer within it counts as late by the whole timeout).
	pingEvery   = 50 * time.Millisecond
	pingTimeout = 2 * time.Second
)

// Ping is one backend the watch pings on a connection of the test's own (never a system's link): Do
// sends one request and returns when it is answered or ctx ends.
type Ping struct {
	Name string
	Do   func(ctx context.Context) error
}

// Watch measures lag from Start until the test ends.
type Watch struct {
	began  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	worst time.Duration // the worst lag seen
	at    time.Duration // when, since began
	what  string        // which signal
}

// Start starts watching; the watch stops when the test ends.
func Start(t testing.TB, pings ...Ping) *Watch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watch{began: time.Now(), cancel: cancel}
	w.wg.Add(1)
	go w.canary(ctx)
	for _, p := range pings {
		w.wg.Add(1)
		go w.ping(ctx, p)
	}
	t.Cleanup(w.stop)
	return w
}

func (w *Watch) stop() {
	w.cancel()
	w.wg.Wait()
}

// canary sleeps canaryPeriod at a time and notes how much later than asked it woke.
func (w *Watch) canary(ctx context.Context) {
	defer w.wg.Done()
	t := time.NewTimer(canaryPeriod)
	defer t.Stop()
	for {
		due := time.Now().Add(canaryPeriod)
		t.Reset(canaryPeriod)
		select {
		case <-ctx.Done():
			return
		case woke := <-t.C:
			w.note(woke.Sub(due), "the test process's own timer")
		}
	}
}

// ping pings p every pingEvery and notes each round trip.
func (w *Watch) ping(ctx context.Context, p Ping) {
	defer w.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pingEvery):
		}
		sent := time.Now()
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		_ = p.Do(pctx)
		cancel()
		if ctx.Err() != nil {
			return // the test ended while the ping was out: it measured nothing
		}
		w.note(time.Since(sent), p.Name+"'s answer to a ping")
	}
}

func (w *Watch) note(lag time.Duration, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if lag > w.worst {
		w.worst, w.at, w.what = lag, time.Since(w.began), what
	}
}

// Worst returns the worst lag seen so far and which signal saw it.
func (w *Watch) Worst() (time.Duration, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.worst, w.what
}

// Handoffs is how many times the worst lag a late event can be past its bound and still be excused by it,
// as the checker rules for a scenario (checker.Handoffs): each hand-off on the event's path as late as
// the worst measured. A takeover two seconds late beside 100 ms of lag is the system's.
const Handoffs = 4

// ExcuseLate is Excuse for a check that measured how far past its bound something came (over): the lag
// excuses it only when it is at least tolerates and can account for it (over ≤ Handoffs × lag).
func (w *Watch) ExcuseLate(t testing.TB, tolerates, over time.Duration, format string, args ...any) {
	t.Helper()
	if worst, _ := w.Worst(); over > Handoffs*worst {
		t.Logf("the lag seen (%s) cannot account for %s past the bound", worst.Round(time.Millisecond), over.Round(time.Millisecond))
		return
	}
	w.Excuse(t, tolerates, format, args...)
}

// Excuse is called by a test whose timing premise has just failed, with the lag that premise tolerates
// (what a healthy system could absorb: an operation's timeout, a bound's scheduling allowance) and what
// failed. When the watch saw at least that much lag, the test is skipped as inconclusive, saying so,
// and counted (LogEnv); otherwise Excuse returns and the test goes on to fail.
func (w *Watch) Excuse(t testing.TB, tolerates time.Duration, format string, args ...any) {
	t.Helper()
	w.mu.Lock()
	worst, at, what := w.worst, w.at, w.what
	w.mu.Unlock()
	if worst < tolerates {
		return
	}
	msg := fmt.Sprintf("INCONCLUSIVE: %s, but the machine was too loaded to judge it: %s ran %s late (%s into the test), "+
		"more than the %s the check tolerates; nothing it can judge was violated",
		fmt.Sprintf(format, args...), what, worst.Round(time.Millisecond), at.Round(time.Millisecond), tolerates)
	record(t.Name(), msg)
	t.Skip(msg)
}

// Inconclusive skips the test as inconclusive, counted as Excuse counts it, for a test whose verdict
// came from a judge that measured the lag itself: a scenario run whose checker found nothing violated
// and a timing verdict it could not judge (checker.Report.Inconclusive).
func Inconclusive(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := "INCONCLUSIVE: " + fmt.Sprintf(format, args...)
	record(t.Name(), msg)
	t.Skip(msg)
}

// record appends the test's line to the file LogEnv names, if any.
func record(name, msg string) {
	path := os.Getenv(LogEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintln(f, Line{Package: pkgDir(), Test: name, Message: msg}) // one line a test: make unit counts lines
}

// Line is one inconclusive test as the file LogEnv names holds it: "./election TestX/redis: INCONCLUSIVE:
// ...", the package's directory as go test takes it (from the module's root) and the test's full name,
// which holds no space (testing writes a subtest's spaces as underscores).
type Line struct {
	Package string // "./election"; "." for the module's root, an absolute directory outside a module
	Test    string // t.Name(): "TestX", "TestX/case"
	Message string // "INCONCLUSIVE: ..."
}

// String is the line, without its newline; a message's newlines become spaces.
func (l Line) String() string {
	return l.Package + " " + l.Test + ": " + strings.ReplaceAll(l.Message, "\n", " ")
}

// ParseLine reads a line String wrote; ok is false for anything else.
func ParseLine(s string) (l Line, ok bool) {
	pkg, rest, found := strings.Cut(strings.TrimRight(s, "\r\n"), " ")
	if !found || !(pkg == "." || strings.HasPrefix(pkg, "./") || filepath.IsAbs(pkg)) {
		return Line{}, false // a line of before packages were named, or not a line at all
	}
	name, msg, found := strings.Cut(rest, ": ")
	if !found || name == "" || strings.ContainsAny(name, " \t") {
		return Line{}, false
	}
	return Line{Package: pkg, Test: name, Message: msg}, true
}

// pkgDir is the package of the running test binary as go test takes it, "./election": go test runs a
// package's test binary in the package's directory, whose path from the module's root (the nearest
// directory above with a go.mod) names the package.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			switch {
			case err != nil:
				return wd
			case rel == ".":
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd
		}
		dir = parent
	}
}
