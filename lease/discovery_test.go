package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
)

// handClock is a clock whose time and timers move only when the test advances it.
type handClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*handTimer
}

type handTimer struct {
	clk  *handClock
	at   time.Time
	c    chan time.Time
	done bool // guarded by clk.mu
}

func (t *handTimer) C() <-chan time.Time { return t.c }

func (t *handTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

func (c *handClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *handClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &handTimer{clk: c, at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	return t
}

func (c *handClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			t.c <- c.now
		}
	}
}

func (c *handClock) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// A burst of fleet announcements runs one discovery round at once and one more at the end of the
// window, however many announcements the burst holds; an announcement after a quiet spell runs at once.
func TestAnnouncementsAreCoalesced(t *testing.T) {
	t.Parallel()
	clk := &handClock{now: time.Unix(1000, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &Manager{cfg: Config{DiscoveryInterval: time.Second}, clock: clk, runCtx: ctx, discoverKick: make(chan struct{}, 1)}
	window := time.Second / joinWindowDivisor
	kicked := func() bool {
		select {
		case <-m.discoverKick:
			return true
		default:
			return false
		}
	}

	m.announced("x", false)
	require.True(t, kicked(), "the first announcement runs a round at once")
	for i := 0; i < 100; i++ {
		m.announced("x", false)
		clk.advance(window / 200)
	}
	require.False(t, kicked(), "announcements inside the window wait for its end")
	require.Eventually(t, func() bool { return clk.waiting() == 1 }, time.Second, time.Millisecond, "one round scheduled")
	clk.advance(window)
	require.Eventually(t, kicked, time.Second, time.Millisecond, "one round at the end of the window")
	require.Never(t, kicked, 50*time.Millisecond, time.Millisecond, "and only one")

	clk.advance(2 * window)
	m.announced("x", false)
	require.True(t, kicked(), "after a quiet spell an announcement runs a round at once")
}

// scanCounter counts full reads of the fleet: reads of the registry (ZRANGE) and SCANs.
type scanCounter struct{ n atomic.Int64 }

func (s *scanCounter) count(cmd redis.Cmder) {
	if n := cmd.Name(); n == "scan" || n == "zrange" {
		s.n.Add(1)
	}
}

func (s *scanCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *scanCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.count(cmd)
		return next(ctx, cmd)
	}
}
func (s *scanCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			s.count(c)
		}
		return next(ctx, cmds)
	}
}

// A round finds the fleet from the heartbeats it knows and the instances announced since; it reads the
// fleet registry only at its first round, when an instance vanished unannounced (and then for one
// HeartbeatTTL), and every nodeRescanRounds discovery intervals.
func TestFleetScansOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	p := newFleetProbe(t, mr.Addr())
	c, clk, m, ctx, beat, cfg := p.c, p.clk, p.m, p.ctx, p.beat, p.m.cfg
	scans := &scanCounter{}
	c.AddHook(scans)
	for _, id := range []string{"self", "a", "b", "c"} {
		beat(id)
	}
	for i := 0; i < 500; i++ {
		require.NoError(t, c.Set(ctx, fmt.Sprintf("poll:lease:ep%d", i), "v", 0).Err())
	}
	round := func() []string {
		t.Helper()
		others, _, err := m.fleet(ctx, false)
		require.NoError(t, err)
		clk.advance(cfg.DiscoveryInterval / 10)
		return others
	}

	require.Equal(t, []string{"a", "b", "c"}, round())
	first := scans.n.Load()
	require.Positive(t, first)
	require.Equal(t, []string{"a", "b", "c"}, round())
	require.Equal(t, first, scans.n.Load(), "a round with nothing new does not scan")

	beat("d")
	require.Equal(t, []string{"a", "b", "c"}, round(), "an unannounced newcomer waits for a scan")
	m.announced("d", false)
	require.Equal(t, []string{"a", "b", "c", "d"}, round(), "an announced one is read at once")
	require.NoError(t, c.Del(ctx, "poll:node:b").Err())
	m.announced("b", true) // a stop: it says why its heartbeat is gone
	require.Equal(t, []string{"a", "c", "d"}, round())
	require.Equal(t, first, scans.n.Load(), "announcements need no scan")

	beat("e")
	require.NoError(t, c.Del(ctx, "poll:node:a").Err()) // gone without a word
	require.Equal(t, []string{"c", "d", "e"}, round(), "a vanished instance makes the round scan")
	afterVanish := scans.n.Load()
	require.Greater(t, afterVanish, first)
	round()
	require.Greater(t, scans.n.Load(), afterVanish, "and the rounds of one HeartbeatTTL after it")
	clk.advance(cfg.HeartbeatTTL)
	n := scans.n.Load()
	round()
	require.Equal(t, n, scans.n.Load(), "then no longer")

	clk.advance(nodeRescanRounds * cfg.DiscoveryInterval)
	round()
	require.Greater(t, scans.n.Load(), n, "a periodic scan finds what announcements missed")
}

// pttlCounter counts the PTTL commands a client sends.
type pttlCounter struct{ n atomic.Int64 }

func (p *pttlCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *pttlCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "pttl" {
			p.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (p *pttlCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "pttl" {
				p.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// A round of the takeover schedule, run when the first known heartbeat is due to expire, reads only
// the heartbeats due by then: when a dead instance's heartbeat expires every instance of the fleet
// runs one at the same moment, and reading the whole fleet's heartbeats on each delayed the takeover.
func TestDueRoundReadsOnlyDueHeartbeats(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	p := newFleetProbe(t, mr.Addr())
	c, clk, m, ctx, beat := p.c, p.clk, p.m, p.ctx, p.beatFor
	pttls := &pttlCounter{}
	c.AddHook(pttls)
	beat("self", time.Hour)
	for id, ttl := range map[string]time.Duration{"a": time.Second, "b": 5 * time.Second, "c": 6 * time.Second,
		"d": 7 * time.Second, "e": 8 * time.Second} {
		beat(id, ttl)
	}
	others, wake, err := m.fleet(ctx, false)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, others)
	require.Equal(t, int64(5), pttls.n.Load(), "a full round reads every heartbeat")
	require.WithinDuration(t, time.Unix(1001, 0), wake, 50*time.Millisecond, "woken at a's expiry")

	// a's heartbeat expires (a crash); b renews meanwhile.
	clk.advance(1100 * time.Millisecond)
	mr.FastForward(1100 * time.Millisecond)
	beat("b", 10*time.Second)
	pttls.n.Store(0)
	others, wake, err = m.fleet(ctx, true)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "d", "e"}, others, "a is gone")
	require.Equal(t, int64(1), pttls.n.Load(), "only a's heartbeat was due (the others in the registry were read)")
	require.WithinDuration(t, time.Unix(1005, 0), wake, 50*time.Millisecond, "next: b's expiry as last read")

	// A vanished instance makes every round read the registry for one HeartbeatTTL (see fleet); once
	// that has passed, at b's old expiry only b's heartbeat is read, found renewed, and the next wake
	// is c's.
	clk.advance(3900 * time.Millisecond)
	mr.FastForward(3900 * time.Millisecond)
	pttls.n.Store(0)
	others, wake, err = m.fleet(ctx, true)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "d", "e"}, others)
	require.Equal(t, int64(1), pttls.n.Load(), "only b's heartbeat was due")
	require.WithinDuration(t, time.Unix(1006, 0), wake, 50*time.Millisecond, "next: c's expiry")

	// A wake with nothing due reads nothing; an ordinary round reads every heartbeat.
	pttls.n.Store(0)
	others, _, err = m.fleet(ctx, true)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "d", "e"}, others)
	require.Zero(t, pttls.n.Load())
	others, _, err = m.fleet(ctx, false)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "d", "e"}, others)
	require.Equal(t, int64(4), pttls.n.Load())
}

// While announcements keep coming, each coalescing window is twice the last, up to a quarter of the
// discovery interval; a quiet spell starts again from the first window; a stop runs a round at once.
func TestAnnouncementWindowGrowsInABurst(t *testing.T) {
	t.Parallel()
	clk := &handClock{now: time.Unix(1000, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &Manager{cfg: Config{DiscoveryInterval: time.Second}, clock: clk, runCtx: ctx, discoverKick: make(chan struct{}, 1)}
	first := time.Second / joinWindowDivisor
	kicked := func() bool {
		select {
		case <-m.discoverKick:
			return true
		default:
			return false
		}
	}
	window := func() time.Duration { m.disc.mu.Lock(); defer m.disc.mu.Unlock(); return m.disc.window }

	m.announced("a", false)
	require.True(t, kicked())
	require.Equal(t, first, window())
	for _, want := range []time.Duration{2 * first, 4 * first, 5 * first, 5 * first} { // capped at 250 ms
		w := window()
		clk.advance(w / 2)
		m.announced("b", false)
		require.False(t, kicked(), "inside the window")
		require.Eventually(t, func() bool { return clk.waiting() == 1 }, time.Second, time.Millisecond)
		m.announced("s", true)
		require.True(t, kicked(), "a stop runs a round at once, even inside the window")
		clk.advance(w)
		require.Eventually(t, kicked, time.Second, time.Millisecond, "the round at the window's end")
		require.Equal(t, want, window())
	}
	clk.advance(2 * window())
	m.announced("c", false)
	require.True(t, kicked(), "after a quiet spell at once")
	require.Equal(t, first, window(), "and from the first window again")
}

// After a Redis restart every heartbeat is gone and the survivors write theirs again one by one. The
// round that finds that out may scan anyway (the link was recovering); an instance that had not yet
// written its heartbeat when that scan read the registry must be found by the rounds of the next
// HeartbeatTTL, not by the periodic scan several DiscoveryIntervals later: until then this instance
// leaves to it endpoints that nobody polls.
func TestScanRoundThatFindsTheFleetGoneKeepsScanning(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	p := newFleetProbe(t, mr.Addr())
	m, beat := p.m, p.beat
	for _, id := range []string{"self", "a", "b"} {
		beat(id)
	}
	require.Equal(t, []string{"a", "b"}, p.round(t))

	mr.FlushAll() // Redis restarted empty
	beat("a")     // a wrote its heartbeat again before the next round, b not yet
	m.mu.Lock()
	m.unhealthy = true // the round runs while the link recovers: it scans
	m.mu.Unlock()
	require.Equal(t, []string{"a"}, p.round(t))
	m.mu.Lock()
	m.unhealthy = false
	m.mu.Unlock()

	beat("b")
	require.Equal(t, []string{"a", "b"}, p.round(t), "b is found by the next round")
}

// An instance that starts just after a Redis restart emptied every heartbeat finds in the registry
// instances whose heartbeats are gone although their entries say they should still be there (the
// survivors write theirs again one by one over a heartbeat interval). Its first round knew nobody, so
// nothing "vanished" from its view; it must still scan at every round for one HeartbeatTTL, or it finds
// a survivor only at the periodic scan several DiscoveryIntervals later and leaves to it, meanwhile,
// endpoints the survivor leaves to this instance (seen: an endpoint unpolled 2.3 s past its liveness
// limit in redis-restart-empty-churn). An entry whose heartbeat has expired as announced (an instance
// long gone) does not make it scan.
func TestFirstRoundAfterARestartKeepsScanningForTheRegistered(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	p := newFleetProbe(t, mr.Addr())
	clk, m, ctx, cfg := p.clk, p.m, p.ctx, p.m.cfg
	p.beatFor("gone", time.Second)   // an instance that died: its entry's expiry passes before self starts
	p.beatFor("a", cfg.HeartbeatTTL) // the survivors' entries, written before the restart
	p.beatFor("b", cfg.HeartbeatTTL)
	clk.advance(2 * time.Second)
	mr.FlushAll() // the restart emptied Redis, and the registry was written again (a wrote first)
	require.NoError(t, p.c.ZAdd(ctx, "poll:nodes", redis.Z{Score: float64(clk.Now().Add(-time.Second).UnixMilli()), Member: "gone"}).Err())
	p.beatFor("a", cfg.HeartbeatTTL)
	require.NoError(t, p.c.ZAdd(ctx, "poll:nodes", redis.Z{Score: float64(clk.Now().Add(cfg.HeartbeatInterval).UnixMilli()), Member: "b"}).Err())
	require.Equal(t, []string{"a"}, p.round(t), "self's first round: b has not written its heartbeat again yet")

	p.beatFor("b", cfg.HeartbeatTTL)
	require.Equal(t, []string{"a", "b"}, p.round(t), "b is found by the next round")

	// With every registered instance found, and the rest long expired, rounds stop scanning.
	clk.advance(cfg.HeartbeatTTL)
	p.round(t)
	m.disc.mu.Lock()
	scanUntil := m.disc.scanUntil
	m.disc.mu.Unlock()
	require.False(t, clk.Now().Before(scanUntil), "no reason to keep scanning")
}

// fleetProbe is a manager "self" whose discovery rounds a test runs by hand (m.fleet), on a hand clock,
// with beatFor writing an instance's heartbeat and registry entry as a heartbeat of that TTL would, and
// beat one that lasts an hour.
type fleetProbe struct {
	c       *redis.Client
	clk     *handClock
	m       *Manager
	ctx     context.Context
	beat    func(id string)
	beatFor func(id string, ttl time.Duration)
}

// round runs a discovery round of self's and advances the clock by a DiscoveryInterval; it returns the
// other instances the round found.
func (p fleetProbe) round(t *testing.T) []string {
	t.Helper()
	others, _, err := p.m.fleet(p.ctx, false)
	require.NoError(t, err)
	p.clk.advance(p.m.cfg.DiscoveryInterval)
	return others
}

func newFleetProbe(t *testing.T, addr string) fleetProbe {
	t.Helper()
	c := newClient(t, addr)
	clk := &handClock{now: time.Unix(1000, 0)}
	cfg := testConfig()
	cfg.InstanceID, cfg.Clock, cfg.Logger = "self", clk, quietLogger()
	cfg.Targets = StaticTargets{"x"}
	cfg.Poll = func(context.Context, Poll) error { return nil }
	m, err := New(c, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.runCtx = ctx
	beatFor := func(id string, ttl time.Duration) {
		require.NoError(t, c.Set(ctx, "poll:node:"+id, "1", ttl).Err())
		require.NoError(t, c.ZAdd(ctx, "poll:nodes", redis.Z{Score: float64(clk.Now().Add(ttl).UnixMilli()), Member: id}).Err())
	}
	beat := func(id string) { beatFor(id, time.Hour) }
	return fleetProbe{c: c, clk: clk, m: m, ctx: ctx, beat: beat, beatFor: beatFor}
}

// An instance that started just after a Redis restart read a registry the survivors had not written
// again yet, and knew none of them: nothing vanished from its view. A survivor that writes its entry
// afterwards without an announcement must be found before the fresh-dataset guard ends, not at the
// periodic rescan (explore, seed 374609155: ep-11 unpolled for 7.1 s, 2.2 s past the wipe's
// deadline, the newcomer's view lacking i0 for 6.6 s).
func TestAFreshDatasetGuardKeepsTheRegistryRead(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	p := newFleetProbe(t, mr.Addr())
	clk, m, ctx, cfg := p.clk, p.m, p.ctx, p.m.cfg
	p.beatFor("a", cfg.HeartbeatTTL) // a wrote its entry again before self started; b had not
	require.Equal(t, []string{"a"}, p.round(t), "self's first round")
	require.NoError(t, p.c.Set(ctx, "poll:epoch", "0 run", 0).Err())
	m.scheduleGuardEnd([]string{"x"}) // self's first acquire pass was refused by the guard

	p.beatFor("b", cfg.HeartbeatTTL) // b's periodic heartbeat: no announcement
	require.Equal(t, []string{"a", "b"}, p.round(t), "b is found while the guard holds grants")
	for clk.Now().Before(m.guardUntil.Add(cfg.LeaseTTL + cfg.DiscoveryInterval)) {
		p.round(t)
	}
	m.disc.mu.Lock()
	scanUntil := m.disc.scanUntil
	m.disc.mu.Unlock()
	require.False(t, clk.Now().Before(scanUntil), "the guard is long over: no reason to keep scanning")
}
