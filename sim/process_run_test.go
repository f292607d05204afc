package sim_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
)

// The process tests run at a twentieth of spec time: a lease TTL of 1.5 s.
const processScale = 0.05

// selfSystem is one of Tenure's systems (reference, election-redis) as a process system whose instances
// are this test binary (see TestMain), declaring caps (the system file's capabilities object).
func selfSystem(t *testing.T, system, kind, caps string) *sim.ProcessSystem {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	if caps == "" {
		caps = `{"beliefs": true, "fencing": true}`
	}
	dir := writeSystem(t, fmt.Sprintf(`{"name": %q, "kind": %q, "command": [%q, "--system", %q],
		"env": {"RUN_AS_TENURE_INSTANCE": "1"}, "capabilities": %s}`, system+"-process", kind, exe, system, caps))
	s, err := sim.Lookup(sim.ExecPrefix + dir)
	require.NoError(t, err)
	return s.(*sim.ProcessSystem)
}

// pythonSystem is testdata/process/instance.py in the given mode; its processes carry the returned
// marker in their command line.
func pythonSystem(t *testing.T, mode, extra string) (*sim.ProcessSystem, string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("TENURE_REQUIRE_FAKETIME") == "1" {
			t.Fatalf("python3 is needed for the process tests' small instances: %v", err)
		}
		t.Skipf("python3 is not installed: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "process", "instance.py"))
	require.NoError(t, err)
	marker := "tenure-test-" + strings.ReplaceAll(strings.Trim(t.TempDir(), "/"), "/", "-") // unique among parallel tests
	dir := writeSystem(t, fmt.Sprintf(`{"name": "py-%s", "kind": "lease", "command": [%q, %q, %q, %q]%s}`,
		mode, py, script, mode, marker, extra))
	s, err := sim.Lookup(sim.ExecPrefix + dir)
	require.NoError(t, err)
	return s.(*sim.ProcessSystem), marker
}

// children lists this process's live children (zombies left out) whose command line contains match,
// with their scheduler state ('R', 'S', 'T', ...).
func children(match string) map[int]byte {
	out := map[int]byte{}
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
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
		if i < 0 || len(fields) < 2 || fields[1] != self || fields[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), match) {
			out[pid] = fields[0][0]
		}
	}
	return out
}

// requireNoneLeft fails when a child process whose command line contains match is still running.
func requireNoneLeft(t *testing.T, match string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(children(match)) == 0 }, 5*time.Second, 20*time.Millisecond,
		"instance processes outlived the run: %v", children(match))
}

func events(h history.History, kind history.Kind) []history.Event {
	var out []history.Event
	for _, e := range h.Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// The reference as processes: every backend command is recorded at the wire, every poll and belief
// over the instances' services, a crash kills the process, and what the checker judges of safety holds.
func TestProcessReferenceIsRecordedAndCrashes(t *testing.T) {
	// Not parallel: it looks for leftover processes of this very test binary, which the
	// instances of other tests run too.
	redistest.Start(t)
	sys := selfSystem(t, "reference", "lease", "")
	sc := sim.Scenario{Name: "process-crash", Instances: 3, Endpoints: 3, Duration: 100 * time.Second, Fencing: true,
		Steps: chaos.Schedule{{At: 50 * time.Second, Jitter: -1, Fault: chaos.Crash{Slot: 0}}}}
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	exe, _ := os.Executable()
	requireNoneLeft(t, exe)

	h := res.History
	acquired := map[string]bool{}
	for _, e := range events(h, history.KindOp) {
		if e.Op.Kind == history.OpAcquire && e.Op.OK {
			acquired[e.Instance] = true
		}
	}
	require.NotEmpty(t, acquired, "acquires were recorded at the wire")
	require.NotEmpty(t, events(h, history.KindPoll), "polls were served")
	require.NotEmpty(t, events(h, history.KindBelief), "beliefs were reported")
	var crashed string
	for _, e := range events(h, history.KindLifecycle) {
		if e.Lifecycle.Change == history.LifeCrashed && e.At < h.Meta.Duration-time.Millisecond {
			crashed = e.Instance
		}
	}
	require.NotEmpty(t, crashed)
	for _, e := range events(h, history.KindOp) {
		require.False(t, e.Instance == crashed && e.At > time.Duration(float64(50*time.Second)*processScale)+200*time.Millisecond,
			"the crashed instance sent %s after its crash", e.Op.Command)
	}
	safety := map[string]bool{checker.InvSingleHolder: true, checker.InvSinglePoller: true, checker.InvStalePoll: true,
		checker.InvLinearizable: true, checker.InvFencing: true}
	for _, r := range checker.Check(h, checker.DefaultOptions()).Results {
		if safety[r.Invariant] {
			delete(safety, r.Invariant)
			require.Contains(t, []checker.Outcome{checker.Pass, checker.Skipped}, r.Outcome, "%s: %s", r.Invariant, r.Message)
		}
	}
	require.Empty(t, safety, "every safety invariant was judged")
}

// A pause of a process is SIGSTOP of its group: the process is seen stopped by the kernel during the
// pause, it takes hold as the holder's poll arrives, and the poll it sends on waking carries its old
// token and is refused by fencing.
func TestProcessPauseIsSIGSTOP(t *testing.T) {
	// Not parallel: it looks for leftover processes of this very test binary, which the
	// instances of other tests run too.
	redistest.Start(t)
	sys := selfSystem(t, "reference", "lease", "")
	// The first grants come a TTL after the start (the reference's fresh-dataset guard): the pause comes
	// well after them, 4 s of real time in. Under make test's side-by-side load the instances (at nice
	// 10) once had not taken ep-0 by 2.5 s, and the pause found nobody to freeze.
	sc := sim.Scenario{Name: "process-pause", Instances: 2, Endpoints: 1, Duration: 150 * time.Second, Fencing: true,
		Steps: chaos.Schedule{{At: 80 * time.Second, For: 45 * time.Second, Jitter: -1, Fault: chaos.Pause{Of: "ep-0"}}}}
	exe, _ := os.Executable()
	type result struct {
		res sim.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
		done <- result{res, err}
	}()
	stopped := 0
	var out result
	for out.res.History.Events == nil && out.err == nil {
		select {
		case out = <-done:
		case <-time.After(10 * time.Millisecond):
			for _, state := range children(exe) {
				if state == 'T' {
					stopped++
				}
			}
		}
	}
	require.NoError(t, out.err)
	require.Empty(t, out.res.FaultErrors)
	require.Greater(t, stopped, 0, "an instance process was seen stopped (state T) during the pause")
	requireNoneLeft(t, exe)

	h := out.res.History
	var paused string
	var from, to time.Duration
	for _, e := range events(h, history.KindLifecycle) {
		switch e.Lifecycle.Change {
		case history.LifePaused:
			paused, from = e.Instance, e.At
		case history.LifeResumed:
			to = e.At
		}
	}
	require.NotEmpty(t, paused)
	require.Greater(t, to, from)
	var token uint64
	for _, e := range events(h, history.KindPoll) {
		if e.Instance == paused && e.At < from {
			token = e.Poll.Token
		}
	}
	refused := false
	for _, e := range events(h, history.KindPoll) {
		if e.Instance == paused && e.At >= to {
			refused = e.Poll.Token == token && e.Poll.Outcome == history.PollRefused
			break
		}
	}
	require.True(t, refused, "the woken holder's first poll carries its old token (%d) and is refused by fencing", token)
}

// requireFaketime skips a clock test where libfaketime is missing, unless CI requires it.
func requireFaketime(t *testing.T) {
	t.Helper()
	for _, pat := range []string{"/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 || os.Getenv("TENURE_LIBFAKETIME") != "" {
			return
		}
	}
	if os.Getenv("TENURE_REQUIRE_FAKETIME") == "1" {
		t.Fatal("libfaketime is not installed (apt-get install libfaketime)")
	}
	t.Skip("libfaketime is not installed (apt-get install libfaketime); set TENURE_REQUIRE_FAKETIME=1 to make this a failure")
}

// A clock fault reaches a process through libfaketime: the instance's own clock readings (clock_ms of
// its polls) run at the rate the fault set, and at real time before and after it, without a jump.
func TestProcessClockRunsAtTheRateSet(t *testing.T) {
	t.Parallel()
	requireFaketime(t)
	redistest.Start(t)
	sys, marker := pythonSystem(t, "poll", "")
	// The drift starts 4 s of real time in: under make test's side-by-side load the Python instance's
	// start and self-test took most of the 2 s it once had, and left the period before it unmeasured.
	sc := sim.Scenario{Name: "process-drift", Instances: 1, Endpoints: 1, Duration: 160 * time.Second,
		Steps: chaos.Schedule{{At: 80 * time.Second, For: 40 * time.Second, Jitter: -1, Fault: chaos.Drift{Slot: 0, Rate: 0.5}}}}
	var log lockedBuffer
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server", Log: &log})
	require.NoError(t, err)
	require.Empty(t, res.FaultErrors)
	requireNoneLeft(t, marker)

	var rates []float64
	selfTest := false
	for _, e := range events(res.History, history.KindNote) {
		selfTest = selfTest || strings.Contains(e.Note, "is under libfaketime")
		if i := strings.Index(e.Note, ": ran at "); i >= 0 {
			var r float64
			_, err := fmt.Sscanf(e.Note[i+len(": ran at "):], "%g", &r)
			require.NoError(t, err, e.Note)
			rates = append(rates, r)
			t.Log(e.Note)
		}
	}
	require.True(t, selfTest, "the start-up self-test saw the clock ahead, as libfaketime set it")
	require.Len(t, rates, 3, "one measured rate before, during and after the drift")
	// Each period is one to two seconds long, and a loopback request's transit blurs its ends by
	// milliseconds: 5 % is far from both 0.5 and 1.
	require.InDelta(t, 1, rates[0], 0.05)
	require.InDelta(t, 0.5, rates[1], 0.05)
	require.InDelta(t, 1, rates[2], 0.05)

	// Continuity: on the instance's own clock, consecutive polls are about a poll interval apart (its
	// sleep), plus the poll's own duration. A sleep that spans a change of rate was timed at the old
	// rate, so across the change from 1 to 0.5 a gap shrinks to as little as half an interval, and
	// across the change back it grows up to two. A clock that jumped at a change (libfaketime rescales
	// all elapsed time unless the offset compensates) would be seconds off here: about −1 s at the first
	// change and +2 s at the second.
	interval := float64(sim.SpecTiming().PollInterval.Milliseconds()) * processScale
	var readings []float64
	log.mu.Lock()
	text := log.b.String()
	log.mu.Unlock()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "[i0] clock "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			require.NoError(t, err, line)
			readings = append(readings, v)
		}
	}
	require.Greater(t, len(readings), 10)
	for i := 1; i < len(readings); i++ {
		gap := readings[i] - readings[i-1]
		require.True(t, gap > 0.4*interval && gap < 3*interval, "clock readings %d and %d are %.1f ms apart on the instance's clock; the poll interval is %.0f ms", i-1, i, gap, interval)
	}
}

// A Go program reads the clock past libfaketime: the self-test says so and the clock scenario stops
// before anything is judged; a system that declares it is refused before anything starts.
func TestGoProcessRefusesClockFaults(t *testing.T) {
	// Not parallel: it looks for leftover processes of this very test binary, which the
	// instances of other tests run too.
	requireFaketime(t)
	redistest.Start(t)
	sc := sim.Scenario{Name: "process-drift-go", Instances: 1, Endpoints: 1, Duration: 60 * time.Second,
		Steps: chaos.Schedule{{At: 30 * time.Second, For: 10 * time.Second, Fault: chaos.Drift{Slot: 0, Rate: 0.5}}}}
	_, err := sim.Run(context.Background(), sim.Options{System: selfSystem(t, "reference", "lease", ""), Scenario: sc, Seed: 1,
		TimeScale: processScale, Backend: "server"})
	require.ErrorContains(t, err, "does not honour libfaketime")
	require.ErrorContains(t, err, "instance i0")
	exe, _ := os.Executable()
	requireNoneLeft(t, exe)

	_, _, err = sim.Plan(sim.Options{System: selfSystem(t, "reference", "lease", `{"faketime": false}`), Scenario: sc, Seed: 1,
		TimeScale: processScale, Backend: "server"})
	require.ErrorIs(t, err, sim.ErrOptions)
	require.ErrorContains(t, err, "does not honour libfaketime (capabilities.faketime false)")
}

// An instance that cannot take part is named with what it wrote last, the run ends with an error
// rather than a verdict, and no process of it is left.
func TestProcessBadInstancesNameThemselves(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	// A run of 30 s at processScale: one that went on to its end would take that long, however loaded
	// the machine; one stopped when the instance is found wanting takes a fraction of it.
	sc := sim.Scenario{Name: "process-bad", Instances: 1, Endpoints: 2, Duration: 600 * time.Second}
	runLength := time.Duration(float64(sc.Duration) * processScale)
	for _, tc := range []struct {
		mode, extra string
		want        []string
	}{
		{"exit", "", []string{"instance i0", "exited with status 3 before it called POST /ready", "boom: this instance gives up at once"}},
		{"silent", `, "ready_timeout_ms": 400`, []string{"instance i0", "did not call POST /ready within 400ms", "wrote nothing"}},
		{"garbage", "", []string{"instance i0", "sent Redis what is not a RESP command"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			sys, marker := pythonSystem(t, tc.mode, tc.extra)
			started := time.Now()
			_, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			require.Less(t, time.Since(started), runLength/2, "the run stops as soon as the instance is found wanting, not at its end")
			requireNoneLeft(t, marker)
		})
	}
}

// An instance that exits on its own during the run has crashed: the history says so, with its status.
func TestProcessExitingByItselfIsACrash(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	sys, marker := pythonSystem(t, "quit", "")
	// 10 s of run: the instance exits 0.3 s after its ready call, well inside the first half even when a
	// loaded machine is slow to start Python.
	sc := sim.Scenario{Name: "process-quit", Instances: 1, Endpoints: 1, Duration: 200 * time.Second}
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
	require.NoError(t, err)
	requireNoneLeft(t, marker)
	var note, crashed bool
	for _, e := range res.History.Events {
		note = note || (e.Kind == history.KindNote && strings.Contains(e.Note, "instance i0 exited with status 4 by itself"))
		crashed = crashed || (e.Kind == history.KindLifecycle && e.Lifecycle.Change == history.LifeCrashed && e.At < res.History.Meta.Duration/2)
	}
	require.True(t, note, "a note gives the exit status")
	require.True(t, crashed, "the instance is recorded crashed when it exited, not at the end of the run")
}

// A graceful stop is SIGTERM; a process that ignores it is killed after the stop bound (two TTLs) and
// the fault says it did not stop gracefully.
func TestProcessIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	sys, marker := pythonSystem(t, "stubborn", "")
	sc := sim.Scenario{Name: "process-stubborn", Instances: 1, Endpoints: 1, Duration: 100 * time.Second,
		Steps: chaos.Schedule{{At: 20 * time.Second, Jitter: -1, Fault: chaos.Stop{Slot: 0}}}}
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
	require.NoError(t, err)
	requireNoneLeft(t, marker)
	require.Len(t, res.FaultErrors, 1)
	require.Contains(t, res.FaultErrors[0], "did not stop gracefully: still running 3s after SIGTERM, killed")
}

// The CPU a process system's own processes use is recorded beside the harness's lag (history.Lag.System,
// with the machine's CPUs): here an instance and a child it forked, both burning CPU. An in-process
// system shares the harness's process, and records none.
func TestProcessSystemCPUIsRecorded(t *testing.T) {
	t.Parallel()
	redistest.Start(t)
	sys, marker := pythonSystem(t, "busy", "")
	sc := sim.Scenario{Name: "process-busy", Instances: 1, Endpoints: 1, Duration: 40 * time.Second}
	res, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
	require.NoError(t, err)
	requireNoneLeft(t, marker)
	lag := res.History.Meta.Lag
	require.NotNil(t, lag)
	t.Logf("system CPU %v over %d windows of %v on %d CPUs; canary max %v", lag.System, lag.Windows, lag.Window, lag.CPUs, lag.Canary.Max)
	require.Positive(t, lag.System, "the busy instance's CPU time was measured")
	require.Equal(t, runtime.NumCPU(), lag.CPUs)
	var kept time.Duration
	for _, s := range lag.Samples {
		kept += s.System
	}
	require.LessOrEqual(t, kept, lag.System, "the kept windows hold part of the total")

	res, err = sim.Run(context.Background(), sim.Options{System: baselines.Naive{}, Scenario: sc, Seed: 1, TimeScale: processScale, Backend: "server"})
	require.NoError(t, err)
	lag = res.History.Meta.Lag
	require.NotNil(t, lag)
	require.Zero(t, lag.System, "an in-process system is not measured apart from the harness")
	require.Zero(t, lag.CPUs)
	for _, s := range lag.Samples {
		require.Zero(t, s.System)
	}
}
