package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
)

// fakeLag drives the lag monitor on a clock of its own: each canary sleep advances the clock by the
// period plus the next scripted lateness, each ping by the next scripted round trip; once a script is
// spent its goroutine waits for the monitor to stop.
type fakeLag struct {
	mu      sync.Mutex
	now     time.Duration
	late    []time.Duration // canary lateness per wake
	rtts    []time.Duration // ping round trips
	sched   [][]uint64      // cumulative histogram per canary wake (first: the baseline)
	buckets []float64
	spent   chan struct{} // closed when the canary's script is spent
	once    sync.Once
}

func (f *fakeLag) sources(ping bool) lagSources {
	s := lagSources{
		now: func() time.Duration { f.mu.Lock(); defer f.mu.Unlock(); return f.now },
		sleep: func(ctx context.Context, d time.Duration) bool {
			f.mu.Lock()
			script := &f.late
			if d == lagWindow {
				script = &f.rtts // the pinger's sleep: its lateness is not measured
			}
			if len(*script) == 0 {
				f.mu.Unlock()
				if script == &f.late {
					f.once.Do(func() { close(f.spent) })
				}
				<-ctx.Done()
				return false
			}
			f.now += d
			if script == &f.late {
				f.now += f.late[0]
				f.late = f.late[1:]
			}
			f.mu.Unlock()
			return true
		},
	}
	if f.sched != nil {
		s.sched = func() ([]uint64, []float64) {
			f.mu.Lock()
			defer f.mu.Unlock()
			c := f.sched[0]
			if len(f.sched) > 1 {
				f.sched = f.sched[1:]
			}
			return c, f.buckets
		}
	}
	if ping {
		s.ping = func(ctx context.Context) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.now += f.rtts[0]
			f.rtts = f.rtts[1:]
			return nil
		}
	}
	return s
}

func TestLagMonitorKeepsTheWindowsAboveTheFloor(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	// 40 wakes of 5 ms: two windows of 100 ms. The 22nd wake (in the second window) is 30 ms late; the
	// scheduler histogram's 30 ms bucket grows at the 3rd wake (first window).
	late := make([]time.Duration, 40)
	late[21] = 30 * ms
	buckets := []float64{0, 0.001, 0.010, 0.030, 0.100}
	sched := [][]uint64{{5, 0, 0, 0}, {6, 0, 0, 0}, {6, 1, 0, 0}, {6, 1, 0, 1}}
	f := &fakeLag{late: late, sched: sched, buckets: buckets, spent: make(chan struct{})}
	m := startLagMonitor(f.sources(false))
	<-f.spent
	got := m.stop(time.Hour)

	require.Equal(t, lagWindow, got.Window)
	require.Equal(t, lagFloor, got.Floor)
	require.Equal(t, 3, got.Windows, "40 wakes of 5 ms and one of 30 ms end at 230 ms: windows 0, 1 and 2")
	require.Equal(t, 30*ms, got.Canary.Max)
	require.Equal(t, 30*ms, got.Sched.Max, "the lower edge of the highest bucket that grew")
	require.Len(t, got.Samples, 2)
	require.Equal(t, history.LagSample{At: 0, Sched: 30 * ms}, got.Samples[0])
	require.Equal(t, 100*ms, got.Samples[1].At)
	require.Equal(t, 30*ms, got.Samples[1].Canary)
	require.Same(t, got, m.stop(time.Hour), "stop is idempotent")
}

func TestLagMonitorTimesTheBackendsPings(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	f := &fakeLag{rtts: []time.Duration{ms, 2 * ms, 150 * ms, ms}, spent: make(chan struct{})}
	m := startLagMonitor(f.sources(true))
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.rtts) == 0 }, 5*time.Second, time.Millisecond)
	got := m.stop(time.Hour)
	require.Equal(t, 150*ms, got.Ping.Max)
	require.Len(t, got.Samples, 1, "one ping over the floor")
	require.Equal(t, 150*ms, got.Samples[0].Ping)
	require.Equal(t, 400*ms, got.Samples[0].At, "noted when the reply came, at 100+1+100+2+100+150 = 453 ms")
}

func TestLagMonitorDropsWindowsAfterTheEnd(t *testing.T) {
	t.Parallel()
	late := make([]time.Duration, 60)
	late[50] = 50 * time.Millisecond
	f := &fakeLag{late: late, spent: make(chan struct{})}
	m := startLagMonitor(f.sources(false))
	<-f.spent
	got := m.stop(200 * time.Millisecond)
	require.Equal(t, 3, got.Windows)
	require.Empty(t, got.Samples, "the late wake came after the run's end")
}

func TestWorstNewBucket(t *testing.T) {
	t.Parallel()
	b := []float64{0, 0.001, 0.010, 0.100}
	require.Equal(t, time.Duration(0), worstNewBucket([]uint64{1, 2, 3}, []uint64{1, 2, 3}, b))
	require.Equal(t, 10*time.Millisecond, worstNewBucket([]uint64{1, 2, 3}, []uint64{9, 2, 4}, b))
	require.Equal(t, time.Millisecond, worstNewBucket(nil, []uint64{0, 1, 0}, b), "no baseline: counted from zero")
	require.Equal(t, time.Duration(0), worstNewBucket(nil, []uint64{1}, b), "a histogram of another shape")
}

// lagChildEnv makes the test binary run TestLagMonitorSeesAStarvedRuntime's child.
const lagChildEnv = "TENURE_LAG_MONITOR_CHILD"

// A runtime with one P and eight goroutines that never block: every runnable goroutine waits for the
// others' time slices (the runtime preempts a goroutine after about 10 ms), which is what an
// oversubscribed machine does to a run. The monitor, in a process of its own so that GOMAXPROCS=1
// holds for it alone, records it.
func TestLagMonitorSeesAStarvedRuntime(t *testing.T) {
	t.Parallel()
	if os.Getenv(lagChildEnv) != "" {
		lagChild()
		return
	}
	if testing.Short() {
		t.Skip("starts a subprocess that burns a CPU for a second")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLagMonitorSeesAStarvedRuntime$", "-test.count=1")
	cmd.Env = append(os.Environ(), lagChildEnv+"=1", "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	var got history.Lag
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "lag: "); ok {
			require.NoError(t, json.Unmarshal([]byte(rest), &got))
		}
	}
	require.NotZero(t, got.Windows, "the child printed no record: %s", out)
	t.Logf("canary max %v p99 %v; sched max %v p99 %v; %d of %d windows kept", got.Canary.Max, got.Canary.P99, got.Sched.Max, got.Sched.P99, len(got.Samples), got.Windows)
	require.NotEmpty(t, got.Samples, "windows over the floor were kept")
	// Eight goroutines taking turns of about 10 ms: each waits some 70 ms for its turn.
	require.GreaterOrEqual(t, got.Sched.Max, 25*time.Millisecond, "the runtime's scheduling latency: %+v", got)
	require.Greater(t, got.Canary.Max, 2*time.Millisecond, "the canary woke late: %+v", got)
}

func lagChild() {
	if runtime.GOMAXPROCS(0) != 1 {
		panic("the child must run with GOMAXPROCS=1")
	}
	start := time.Now()
	m := startLagMonitor(realLagSources(func() time.Duration { return time.Since(start) }, nil, nil))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for !stop.Load() {
				n++
			}
			_ = n
		}()
	}
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	b, _ := json.Marshal(m.stop(time.Since(start)))
	os.Stdout.WriteString("lag: " + string(b) + "\n")
}

// A backend of several servers is pinged on every node at once, and the ping ends with the first answer:
// a node under a fault (here one that accepts connections and never answers, as a paused Redis does)
// does not make the machine look starved while another node answers; with no node answering, the ping
// lasts until its context ends.
func TestLagPingsEveryNodeOfSeveral(t *testing.T) {
	t.Parallel()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	live := miniredis.RunT(t)
	for _, topology := range []string{TopologyCluster, TopologySentinel, TopologyIndependent} {
		d := aboutOnly{about: deploy.About{Topology: topology},
			nodes: []deploy.Node{{Name: "paused", Listen: silent.Addr().String()}, {Name: "up", Listen: live.Addr()}}}
		ping, closePings := lagPing(d, nil)
		sent := time.Now()
		require.NoError(t, ping(context.Background()), topology)
		require.Less(t, time.Since(sent), lagPingTimeout/2, "%s: the answering node's reply ends the ping", topology)
		require.NoError(t, closePings())

		d.nodes = d.nodes[:1]
		ping, closePings = lagPing(d, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		require.Error(t, ping(ctx), "%s: no node answered", topology)
		cancel()
		require.NoError(t, closePings())
	}
}

// aboutOnly is a deployment that only says what it is and lists its nodes.
type aboutOnly struct {
	deploy.Deployment
	about deploy.About
	nodes []deploy.Node
}

func (a aboutOnly) About() deploy.About  { return a.about }
func (a aboutOnly) Nodes() []deploy.Node { return a.nodes }

// A run on PostgreSQL pings it too: both pings are sent, and an error of either is the ping's.
func TestBothPingsPingBoth(t *testing.T) {
	t.Parallel()
	var calls []string
	a := func(context.Context) error { calls = append(calls, "redis"); return nil }
	b := func(context.Context) error { calls = append(calls, "postgres"); return errors.New("down") }
	require.Error(t, bothPings(a, b)(context.Background()))
	require.Equal(t, []string{"redis", "postgres"}, calls)
	calls = nil
	require.Error(t, bothPings(nil, b)(context.Background()))
	require.Equal(t, []string{"postgres"}, calls)
}

// A stat line's command name may hold spaces and parentheses: the fields are counted after its last ')'.
func TestParseStat(t *testing.T) {
	t.Parallel()
	line := "4242 (a (b) c) R 1 4240 4240 0 -1 4194304 120 0 0 0 37 5 0 0 30 10 1 0 987654 1000 100 18446744073709551615\n"
	st, ok := parseStat([]byte(line))
	require.True(t, ok)
	require.Equal(t, procStat{pid: 4242, pgrp: 4240, utime: 37, stime: 5, start: 987654}, st)
	_, ok = parseStat([]byte("4242 (x) R 1 4240"))
	require.False(t, ok, "cut short")
	_, ok = parseStat([]byte("garbage"))
	require.False(t, ok)

	self, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	st, ok = parseStat(self)
	require.True(t, ok)
	require.Equal(t, os.Getpid(), st.pid)
	require.Equal(t, syscall.Getpgrp(), st.pgrp)
	require.Positive(t, clockTick())
}

// A reading of the system's CPU is spread over the windows its span covers, in proportion, and adds up
// to what was read.
func TestLagSpreadsTheSystemsCPU(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	m := &lagMonitor{window: lagWindow}
	m.spread(50*ms, 250*ms, 100*ms) // 50 ms of window 0, all of 1, 50 ms of 2
	m.spread(250*ms, 250*ms, 7*ms)  // an empty span: all to the window holding it
	m.spread(260*ms, 300*ms, 0)
	require.Len(t, m.wins, 3)
	require.Equal(t, []time.Duration{25 * ms, 50 * ms, 32 * ms}, []time.Duration{m.wins[0].System, m.wins[1].System, m.wins[2].System})
}

// The system's CPU is read every window and recorded per window, summed over every window, and kept in
// the windows kept for another signal: it keeps no window by itself. The machine's CPUs are recorded
// with it; without the source neither is.
func TestLagMonitorRecordsTheSystemsCPU(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var mu sync.Mutex
	var now time.Duration
	late := []time.Duration{0, 0, 50 * ms, 0} // the CPU reader's wakes; the third comes 50 ms late
	used := []time.Duration{0, 10 * ms, 20 * ms, 60 * ms, 40 * ms}
	spent := make(chan struct{})
	src := lagSources{
		now: func() time.Duration { mu.Lock(); defer mu.Unlock(); return now },
		sleep: func(ctx context.Context, d time.Duration) bool {
			mu.Lock()
			if d != lagWindow || len(late) == 0 { // the canary sleeps for good: this test is the CPU's
				if d == lagWindow {
					close(spent)
				}
				mu.Unlock()
				<-ctx.Done()
				return false
			}
			now += d + late[0]
			late = late[1:]
			mu.Unlock()
			return true
		},
		system: func() time.Duration { mu.Lock(); defer mu.Unlock(); u := used[0]; used = used[1:]; return u },
	}
	m := startLagMonitor(src)
	<-spent
	m.note(120*ms, func(s *history.LagSample) { s.Canary = lagFloor }) // window 1 is kept
	got := m.stop(time.Hour)
	// Readings at 100, 200, 350 and 450 ms: 10 ms in window 0, 20 in 1, 60 over [200, 350) — 40 in
	// window 2, 20 in 3 — and 40 over [350, 450): 20 in 3, 20 in 4.
	require.Equal(t, 130*ms, got.System)
	require.Equal(t, runtime.NumCPU(), got.CPUs)
	require.Equal(t, []history.LagSample{{At: 100 * ms, Canary: lagFloor, System: 20 * ms}}, got.Samples)
	require.Equal(t, 5, got.Windows)

	f := &fakeLag{late: make([]time.Duration, 30), spent: make(chan struct{})}
	m = startLagMonitor(f.sources(false))
	<-f.spent
	got = m.stop(time.Hour)
	require.Zero(t, got.System)
	require.Zero(t, got.CPUs, "not measured: an in-process system")
}

// The CPU time of a group's processes is what they used since the last reading: a process burning CPU
// shows, even when it was listed before its group was added, and a group no longer counted shows
// nothing.
// A window the system starved (a whole CPU's worth of its own processes' time) is kept without any lag
// of its own: the lateness it caused is observed in a later window, and the checker charges that
// lateness to the system by the windows it covered. A busy window short of that is not kept.
func TestSummaryKeepsTheWindowsTheSystemStarved(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	wins := []history.LagSample{
		{At: 0, System: 40 * ms},
		{At: 100 * ms, System: 100 * ms},
		{At: 200 * ms, Canary: 150 * ms},
	}
	got := summarizeLag(wins, 100*ms, lagFloor)
	require.Equal(t, []history.LagSample{{At: 100 * ms, System: 100 * ms}, {At: 200 * ms, Canary: 150 * ms}}, got.Samples)
	require.Equal(t, 140*ms, got.System)
}

func TestSystemCPUReadsTheGroupsProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("burns a CPU for a moment")
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	_, err := startProcess(cmd)
	require.NoError(t, err)
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() })
	c := newSystemCPU()
	require.Zero(t, c.used(), "no group yet")
	c.add(1 << 30) // no such group: the listing passes the busy process over, and remembers it did
	require.Zero(t, c.used())
	require.Contains(t, c.others, pid)
	c.add(pid) // its group is added after /proc was read, as an instance's is after its start
	var total time.Duration
	require.Eventually(t, func() bool { total += c.used(); return total > 0 }, 10*time.Second, 50*time.Millisecond)
	c.remove(pid)
	require.Zero(t, c.used())
}
