package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
)

// The lag monitor's timing. A window of 100 ms keeps a run's lag record short (ten samples a second at
// most, and only those above the floor) while resolving a spike to well under a poll interval at the
// fastest time scale the suites use (1 s at 0.1). The canary wakes twenty times a window, so a stall
// of more than a few milliseconds cannot fall between two of its wakes. The floor is well below the
// threshold the checker judges against (checker.LagThreshold, 25 ms), so the report shows lag rising
// before it matters, and above what an idle machine shows (well under a millisecond).
const (
	lagWindow       = 100 * time.Millisecond
	lagCanaryPeriod = 5 * time.Millisecond
	lagFloor        = 10 * time.Millisecond
	// lagPingTimeout bounds one PING: a backend that does not answer within it is either under a fault
	// (the checker leaves pings during backend faults out) or starved beyond any bound the checker
	// uses; the ping then counts as late by the whole timeout.
	lagPingTimeout = time.Second
)

// schedLatencies is the Go runtime's histogram of the time goroutines spent runnable before running.
const schedLatencies = "/sched/latencies:seconds"

// lagSources is what the lag monitor measures with. Tests replace them; the run uses realLagSources.
type lagSources struct {
	// now is the run's clock (the recorder's).
	now func() time.Duration
	// sleep waits d or until ctx ends, reporting whether it waited the whole d.
	sleep func(ctx context.Context, d time.Duration) bool
	// sched returns the cumulative histogram of goroutine scheduling latencies: counts per bucket, and
	// the bucket boundaries in seconds (len(counts)+1 of them). Nil: not measured.
	sched func() (counts []uint64, buckets []float64)
	// ping sends one PING to the backend on the harness's own connection. Nil: not measured.
	ping func(ctx context.Context) error
	// system returns the CPU time the system under test's own processes used since its previous call
	// (since the first call for the first). Nil: not measured (an in-process system).
	system func() time.Duration
}

// realLagSources measures the real runtime, on the run's clock now, pinging the backend with ping, and
// the system's CPU with system (nil for an in-process system; see systemCPU).
func realLagSources(now func() time.Duration, ping func(ctx context.Context) error, system func() time.Duration) lagSources {
	s := []metrics.Sample{{Name: schedLatencies}}
	return lagSources{
		now:   now,
		sleep: sleepCtx,
		sched: func() ([]uint64, []float64) {
			metrics.Read(s)
			if s[0].Value.Kind() != metrics.KindFloat64Histogram {
				return nil, nil
			}
			h := s[0].Value.Float64Histogram()
			return h.Counts, h.Buckets
		},
		ping:   ping,
		system: system,
	}
}

// lagPing is how the lag monitor pings the backend: on the harness's own connections, never an instance's
// link, whose faults are the system's business. A backend of one server is pinged on admin. A backend of
// several servers (Sentinel, Cluster, independent nodes) is pinged on every node at once, each on a
// connection of its own to the process itself, and the ping lasts until the first answer: a node a fault
// killed or paused does not answer, and waiting for it would read as a starved machine, but the fastest
// of the others measures how late the machine lets a Redis answer; only when every node is under a fault
// does the ping wait for one (the checker leaves pings during backend faults out). The returned close
// ends the connections.
func lagPing(backend deploy.Deployment, admin redis.UniversalClient) (ping func(context.Context) error, close func() error) {
	if !several(backend) {
		return func(ctx context.Context) error { return admin.Ping(ctx).Err() }, func() error { return nil }
	}
	var clients []*redis.Client
	for _, n := range backend.Nodes() {
		clients = append(clients, redis.NewClient(&redis.Options{
			Addr: n.Listen, MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true,
			DialTimeout: lagPingTimeout, ReadTimeout: lagPingTimeout, WriteTimeout: lagPingTimeout,
		}))
	}
	return func(ctx context.Context) error { return firstAnswer(ctx, clients) }, func() error {
		var errs []error
		for _, c := range clients {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
}

// firstAnswer pings every client at once and returns when the first answers (nil), or, when none does,
// with the errors of all.
func firstAnswer(ctx context.Context, clients []*redis.Client) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the slower pings end with it
	errs := make(chan error, len(clients))
	for _, c := range clients {
		go func() { errs <- c.Ping(ctx).Err() }()
	}
	var failed []error
	for range clients {
		err := <-errs
		if err == nil {
			return nil
		}
		failed = append(failed, err)
	}
	return errors.Join(failed...)
}

// bothPings is a ping of two backends one after the other (either may be nil): a run whose system uses
// PostgreSQL keeps its sessions and namespace in Redis.
func bothPings(a, b func(context.Context) error) func(context.Context) error {
	if a == nil {
		return b
	}
	return func(ctx context.Context) error { return errors.Join(a(ctx), b(ctx)) }
}

// lagMonitor measures the harness's own lateness through a run (see history.Lag): a canary timer, the
// runtime's scheduling latencies, and the backend's answers to the harness's pings, each kept as the
// worst value per window.
type lagMonitor struct {
	src                   lagSources
	window, period, floor time.Duration

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	result   *history.Lag

	mu   sync.Mutex
	wins []history.LagSample // by window number
}

// startLagMonitor starts measuring; stop ends it and returns the record.
func startLagMonitor(src lagSources) *lagMonitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &lagMonitor{src: src, window: lagWindow, period: lagCanaryPeriod, floor: lagFloor, cancel: cancel}
	m.wg.Add(1)
	go m.canary(ctx)
	if src.ping != nil {
		m.wg.Add(1)
		go m.pinger(ctx)
	}
	if src.system != nil {
		m.wg.Add(1)
		go m.cpu(ctx)
	}
	return m
}

// canary wakes every period and notes how late it woke, and with it the worst scheduling latency the
// runtime recorded since its previous wake.
func (m *lagMonitor) canary(ctx context.Context) {
	defer m.wg.Done()
	var prev []uint64
	if m.src.sched != nil {
		counts, _ := m.src.sched()
		prev = slices.Clone(counts)
	}
	for {
		due := m.src.now() + m.period
		if !m.src.sleep(ctx, m.period) {
			return
		}
		at := m.src.now()
		m.note(at, func(s *history.LagSample) { s.Canary = max(s.Canary, at-due) })
		if m.src.sched != nil {
			counts, buckets := m.src.sched()
			worst := worstNewBucket(prev, counts, buckets)
			prev = append(prev[:0], counts...)
			m.note(at, func(s *history.LagSample) { s.Sched = max(s.Sched, worst) })
		}
	}
}

// worstNewBucket returns the lower edge of the highest bucket whose count grew from prev to counts:
// at least that long, some goroutine waited to run. A histogram that shrank or changed shape counts as
// new from zero.
func worstNewBucket(prev, counts []uint64, buckets []float64) time.Duration {
	if len(buckets) != len(counts)+1 {
		return 0
	}
	for i := len(counts) - 1; i >= 0; i-- {
		var before uint64
		if len(prev) == len(counts) {
			before = prev[i]
		}
		if counts[i] > before {
			edge := buckets[i]
			if math.IsInf(edge, 0) || edge <= 0 {
				return 0
			}
			return time.Duration(edge * float64(time.Second))
		}
	}
	return 0
}

// pinger sends the backend a PING every window and notes its round trip. A ping that fails counts by
// the time it took to fail: a timeout is a backend that did not answer.
func (m *lagMonitor) pinger(ctx context.Context) {
	defer m.wg.Done()
	for m.src.sleep(ctx, m.window) {
		t0 := m.src.now()
		pctx, cancel := context.WithTimeout(ctx, lagPingTimeout)
		_ = m.src.ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return // the run ended while the ping was out: it measured nothing
		}
		at := m.src.now()
		m.note(at, func(s *history.LagSample) { s.Ping = max(s.Ping, at-t0) })
	}
}

// cpu reads the CPU time the system's processes used every window, in a goroutine of its own so that a
// slow read of /proc delays no other signal, and spreads each reading evenly over the time since the
// previous one: a reading that came late covers several windows, and is not piled into one.
func (m *lagMonitor) cpu(ctx context.Context) {
	defer m.wg.Done()
	m.src.system() // the baseline: nothing runs yet, or nothing of it is the run's
	prev := m.src.now()
	for m.src.sleep(ctx, m.window) {
		used := m.src.system()
		at := m.src.now()
		m.spread(prev, at, used)
		prev = at
	}
}

// spread adds used to the System of the windows that [from, to) covers, in proportion to how much of
// each it covers (all of it to the window holding to, when the span is empty).
func (m *lagMonitor) spread(from, to, used time.Duration) {
	if used <= 0 {
		return
	}
	from = max(from, 0)
	if to <= from {
		m.note(to, func(s *history.LagSample) { s.System += used })
		return
	}
	left := used
	for start := from - from%m.window; start < to && left > 0; start += m.window {
		end := start + m.window
		share := left // the last window takes what is left, so that nothing is lost to rounding
		if end < to {
			share = time.Duration(float64(used) * float64(min(end, to)-max(start, from)) / float64(to-from))
		}
		left -= share
		m.note(max(start, from), func(s *history.LagSample) { s.System += share })
	}
}

// note updates the sample of the window holding at.
func (m *lagMonitor) note(at time.Duration, update func(*history.LagSample)) {
	if at < 0 {
		return
	}
	k := int(at / m.window)
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.wins) <= k {
		m.wins = append(m.wins, history.LagSample{At: time.Duration(len(m.wins)) * m.window})
	}
	update(&m.wins[k])
}

// stop ends the measurement and returns the record of the windows up to end (the run's end). Later
// calls return the same record.
func (m *lagMonitor) stop(end time.Duration) *history.Lag {
	if m == nil {
		return nil // not measured (virtual time)
	}
	m.stopOnce.Do(func() {
		m.cancel()
		m.wg.Wait()
		m.mu.Lock()
		defer m.mu.Unlock()
		wins := m.wins
		for len(wins) > 0 && wins[len(wins)-1].At > end {
			wins = wins[:len(wins)-1]
		}
		m.result = summarizeLag(wins, m.window, m.floor)
		if m.src.system != nil {
			m.result.CPUs = runtime.NumCPU()
		}
	})
	return m.result
}

// summarizeLag builds the record: every window's signals summarised, the windows at or above floor kept,
// and those the system's own processes starved.
func summarizeLag(wins []history.LagSample, window, floor time.Duration) *history.Lag {
	out := &history.Lag{Window: window, Floor: floor, Windows: len(wins)}
	summary := func(get func(history.LagSample) time.Duration) history.LagSummary {
		vals := make([]time.Duration, len(wins))
		for i, w := range wins {
			vals[i] = get(w)
		}
		slices.Sort(vals)
		if len(vals) == 0 {
			return history.LagSummary{}
		}
		rank := (99*len(vals) + 99) / 100
		return history.LagSummary{Max: vals[len(vals)-1], P99: vals[max(0, min(len(vals), rank)-1)]}
	}
	out.Canary = summary(func(s history.LagSample) time.Duration { return s.Canary })
	out.Sched = summary(func(s history.LagSample) time.Duration { return s.Sched })
	out.Ping = summary(func(s history.LagSample) time.Duration { return s.Ping })
	for _, w := range wins {
		out.System += w.System
		// A window in which the system's own processes used a whole CPU's worth is kept too, lag or
		// none: lateness observed in a later window may have covered it, and it is the system's.
		if max(w.Canary, w.Sched, w.Ping) >= floor || w.System >= window {
			out.Samples = append(out.Samples, w)
		}
	}
	return out
}

// systemCPU measures the CPU time a process system's instances use: the user and system time
// (utime+stime of /proc/<pid>/stat, of all the process's threads) of every process in the process group
// of a live instance, the instance's own and whatever it started. Once a window (used) it lists /proc and
// reads the stat file of each process in those groups, and of each process it has not seen before,
// whose group it learns. A process outside the groups is not read again while its entry in /proc stays
// the same (its pid with the same inode: a pid used again is a new inode), and the record of those is
// forgotten when a group is added (an instance's process may have been seen just before its group was
// added): a window costs one listing of /proc and a few microseconds per process of the system.
//
// A process is known by its pid and start time, so that a pid used again is a new process; one seen for
// the first time counts all its CPU time, which it used since its start, in the run. What a process used
// between its last reading and its end is not counted (at most one window's worth each). Every error of
// /proc is a process that went away meanwhile, and is passed over.
type systemCPU struct {
	tick time.Duration // one clock tick of /proc/<pid>/stat

	mu     sync.Mutex
	groups map[int]bool // the live instances' process groups
	added  bool         // a group was added since the last reading

	// Only used's caller (the lag monitor's cpu goroutine) touches these.
	last   map[procKey]time.Duration // each process of the groups: its CPU time at the last reading
	others map[int]uint64            // each process outside the groups: its entry's inode
	buf    []byte                    // one stat file
	dents  []byte                    // the listing of /proc
}

type procKey struct {
	pid   int
	start uint64 // clock ticks after boot
}

func newSystemCPU() *systemCPU {
	return &systemCPU{tick: clockTick(), groups: map[int]bool{}, last: map[procKey]time.Duration{}, others: map[int]uint64{},
		buf: make([]byte, 1024), dents: make([]byte, 16<<10)}
}

// add counts the processes of the group pgid from now on; remove stops.
func (c *systemCPU) add(pgid int) {
	c.mu.Lock()
	c.groups[pgid], c.added = true, true
	c.mu.Unlock()
}

func (c *systemCPU) remove(pgid int) {
	c.mu.Lock()
	delete(c.groups, pgid)
	c.mu.Unlock()
}

// used returns the CPU time the groups' processes used since the previous call.
func (c *systemCPU) used() time.Duration {
	c.mu.Lock()
	groups := make(map[int]bool, len(c.groups))
	for g := range c.groups {
		groups[g] = true
	}
	if c.added {
		clear(c.others)
		c.added = false
	}
	c.mu.Unlock()
	if len(groups) == 0 {
		clear(c.last)
		return 0
	}
	dir, err := syscall.Open("/proc", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer func() { _ = syscall.Close(dir) }()
	var total time.Duration
	next := make(map[procKey]time.Duration, len(c.last))
	others := make(map[int]uint64, len(c.others))
	for {
		n, err := syscall.Getdents(dir, c.dents)
		if err != nil || n <= 0 {
			break
		}
		// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name (NUL-ended).
		for off := 0; off+19 < n; {
			reclen := int(binary.NativeEndian.Uint16(c.dents[off+16:]))
			if reclen <= 0 || off+reclen > n {
				break
			}
			ino := binary.NativeEndian.Uint64(c.dents[off:])
			name := c.dents[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			pid64, ok := atou(name)
			if !ok {
				continue // not a process
			}
			pid := int(pid64)
			if seen, ok := c.others[pid]; ok && seen == ino {
				others[pid] = ino
				continue
			}
			st, ok := c.readStat(dir, name)
			if !ok {
				continue
			}
			if !groups[st.pgrp] {
				others[pid] = ino
				continue
			}
			key := procKey{pid: st.pid, start: st.start}
			cpu := time.Duration(st.utime+st.stime) * c.tick
			if prev, seen := c.last[key]; seen {
				total += max(cpu-prev, 0)
			} else {
				total += cpu
			}
			next[key] = cpu
		}
	}
	c.last, c.others = next, others
	return total
}

// procStat is what systemCPU reads of /proc/<pid>/stat.
type procStat struct {
	pid, pgrp    int
	utime, stime uint64 // clock ticks
	start        uint64 // clock ticks after boot
}

// readStat reads <pid>/stat of the directory /proc (open as dir) into the systemCPU's buffer: pid
// (field 1), pgrp (5), utime (14), stime (15), starttime (22). ok is false when the process is gone or
// the file is not as expected.
func (c *systemCPU) readStat(dir int, pid []byte) (st procStat, ok bool) {
	fd, err := syscall.Openat(dir, string(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return st, false
	}
	n, err := syscall.Read(fd, c.buf)
	_ = syscall.Close(fd)
	if err != nil || n <= 0 {
		return st, false
	}
	return parseStat(c.buf[:n])
}

// parseStat reads the fields of a stat line that systemCPU needs. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself: the fields after it are counted from its last
// closing parenthesis.
func parseStat(b []byte) (st procStat, ok bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return st, false
	}
	pid, ok := atou(bytes.TrimSpace(b[:open]))
	if !ok {
		return st, false
	}
	st.pid = int(pid)
	// The fields from 3 (state) on, separated by spaces, up to 22.
	rest, n := b[end+1:], 2
	for n < 22 {
		rest = bytes.TrimLeft(rest, " \n")
		if len(rest) == 0 {
			return st, false
		}
		i := bytes.IndexAny(rest, " \n")
		if i < 0 {
			i = len(rest)
		}
		tok := rest[:i]
		rest, n = rest[i:], n+1
		var v uint64
		switch n {
		case 5, 14, 15, 22:
			if v, ok = atou(tok); !ok {
				return st, false
			}
		}
		switch n {
		case 5:
			st.pgrp = int(v)
		case 14:
			st.utime = v
		case 15:
			st.stime = v
		case 22:
			st.start = v
		}
	}
	return st, true
}

// atou reads a decimal number of up to 18 digits.
func atou(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// atClkTck is the auxiliary vector's entry for the frequency of times(2)'s clock ticks, those of
// /proc/<pid>/stat: what sysconf(_SC_CLK_TCK) returns.
const atClkTck = 17

// clockTick is the length of one clock tick of /proc/<pid>/stat, from the process's auxiliary vector as
// sysconf(_SC_CLK_TCK) reads it; 10 ms (USER_HZ 100, what Linux uses everywhere) when it cannot be read.
func clockTick() time.Duration {
	const fallback = 10 * time.Millisecond
	auxv, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return fallback
	}
	const word = bits.UintSize / 8
	for i := 0; i+2*word <= len(auxv); i += 2 * word {
		var key, val uint64
		if word == 8 {
			key, val = binary.NativeEndian.Uint64(auxv[i:]), binary.NativeEndian.Uint64(auxv[i+word:])
		} else {
			key, val = uint64(binary.NativeEndian.Uint32(auxv[i:])), uint64(binary.NativeEndian.Uint32(auxv[i+word:]))
		}
		if key == atClkTck && val > 0 && val <= uint64(time.Second) {
			return time.Second / time.Duration(val)
		}
		if key == 0 {
			break
		}
	}
	return fallback
}
