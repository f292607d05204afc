// Package bubble runs a function in a testing/synctest bubble from any program: inside it the clock
// stands still while code runs and jumps to the next timer once every goroutine of the bubble is durably
// blocked, so a run's timing is spec timing however slow or loaded the machine.
//
// testing/synctest offers bubbles to tests only (synctest.Test takes a *testing.T). Outside a test
// binary, this package starts the testing package's runner once, with one test that serves the bubbles
// asked for, one at a time. One at a time is deliberate: go-redis keeps timers in a package-level pool,
// and a timer made in one bubble must never be used in another, so between bubbles the pool is emptied
// (two collections empty every sync.Pool). A test binary must call ForTest first; its bubbles are the
// test's own.
package bubble

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// ErrStuck wraps the error of a bubble whose goroutines all waited on something no timer ends.
var ErrStuck = errors.New("bubble: every goroutine is blocked and no timer is pending")

type job struct {
	f    func()
	done chan error
}

var (
	mu      sync.Mutex // serialises bubbles in this process
	startMu sync.Once
	jobs    chan job
	testT   *testing.T
)

// ForTest makes Run use t's bubbles (in a test binary, where the runner is the test's) until the test
// ends. Tests that call it must not run in parallel with each other.
func ForTest(t *testing.T) {
	mu.Lock()
	testT = t
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		testT = nil
		mu.Unlock()
	})
}

// Run runs f in a new bubble and returns once f and every goroutine it started have returned. A
// bubble whose goroutines are all blocked with no timer pending (a deadlock, or goroutines left
// waiting after f returned) ends with an error wrapping ErrStuck that names where they waited; a
// panic in f is returned as an error. Bubbles run one at a time per process.
func Run(f func()) error {
	mu.Lock()
	defer mu.Unlock()
	_ = MutexWaitsIdle() // without it, a hang is reported by the caller's stall watch
	if testT != nil {
		return inTest(testT, f)
	}
	if testing.Testing() {
		return errors.New("bubble: in a test binary, call bubble.ForTest(t) before running a bubble")
	}
	startMu.Do(startRunner)
	drainPools()
	j := job{f: f, done: make(chan error, 1)}
	jobs <- j
	return <-j.done
}

// drainPools empties every sync.Pool (go-redis's timer pool among them), so no timer of an earlier
// bubble is handed to the next.
func drainPools() {
	runtime.GC()
	runtime.GC()
}

// inTest runs f in a bubble of t, turning a deadlock or a panic into an error.
func inTest(t *testing.T, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = asError(r)
		}
	}()
	var panicked any
	synctest.Test(t, func(*testing.T) {
		defer func() { panicked = recover() }()
		f()
	})
	if panicked != nil {
		return fmt.Errorf("bubble: panic: %v", panicked)
	}
	return nil
}

func asError(r any) error {
	s := fmt.Sprint(r)
	if strings.Contains(s, "deadlock") {
		return fmt.Errorf("%w (%s); blocked: %s", ErrStuck, s, blocked())
	}
	return fmt.Errorf("bubble: %s", s)
}

// blocked names where the goroutines of the newest bubble wait: the first frame of each and where it
// was started, with a count.
func blocked() string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	newest := -1
	type g struct {
		bubble int
		where  string
	}
	var gs []g
	for _, block := range strings.Split(string(buf), "\n\n") {
		head, rest, _ := strings.Cut(block, "\n")
		i := strings.Index(head, "synctest bubble ")
		if i < 0 {
			continue
		}
		var n int
		fmt.Sscanf(head[i+len("synctest bubble "):], "%d", &n)
		lines := strings.Split(rest, "\n")
		where := strings.TrimSpace(lines[0])
		for k, l := range lines {
			if strings.HasPrefix(l, "created by ") && k+1 < len(lines) {
				where += " <- " + strings.TrimPrefix(l, "created by ")
			}
		}
		gs = append(gs, g{n, where})
		newest = max(newest, n)
	}
	count := map[string]int{}
	var order []string
	for _, x := range gs {
		if x.bubble != newest {
			continue
		}
		if count[x.where] == 0 {
			order = append(order, x.where)
		}
		count[x.where]++
	}
	var out []string
	for _, w := range order {
		out = append(out, fmt.Sprintf("%d× %s", count[w], w))
	}
	return strings.Join(out, "; ")
}

// startRunner starts the testing package's runner with one test that serves bubbles for as long as the
// process lives. The runner parses the testing flags from an empty command line (the program's own are
// its business) and writes nothing the program did not ask for.
func startRunner() {
	jobs = make(chan job)
	started := make(chan struct{})
	tests := []testing.InternalTest{{Name: "Bubbles", F: func(t *testing.T) {
		close(started)
		for j := range jobs {
			j.done <- inTest(t, j.f)
		}
	}}}
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	m := testing.MainStart(deps{}, tests, nil, nil, nil)
	go m.Run() // returns only if the process ends the loop; it never does
	<-started
}

// deps is what the testing runner needs of a test binary's generated main, reduced to running tests.
type deps struct{}

func (deps) ImportPath() string                          { return "" }
func (deps) ModulePath() string                          { return "" }
func (deps) MatchString(pat, str string) (bool, error)   { return true, nil }
func (deps) SetPanicOnExit0(bool)                        {}
func (deps) StartCPUProfile(io.Writer) error             { return errors.New("bubble: no profiling") }
func (deps) StopCPUProfile()                             {}
func (deps) StartTestLog(io.Writer)                      {}
func (deps) StopTestLog() error                          { return nil }
func (deps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (deps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errors.New("bubble: no fuzzing")
}
func (deps) RunFuzzWorker(func(corpusEntry) error) error { return errors.New("bubble: no fuzzing") }
func (deps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) {
	return nil, errors.New("bubble: no fuzzing")
}
func (deps) CheckCorpus([]any, []reflect.Type) error { return nil }
func (deps) ResetCoverage()                          {}
func (deps) SnapshotCoverage()                       {}
func (deps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

// corpusEntry is the testing package's fuzz corpus entry (an alias of an unnamed struct there).
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}
