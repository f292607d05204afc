package lease

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// A fleet of managers in one process over static endpoints, against a private redis-server, from a
// fresh dataset to full coverage. The benchmark (BenchmarkFleetScale) reports how long after the end
// of the fresh-dataset guard the fleet holds every endpoint with exact balance; the test
// (TestFleetScaleSmall) checks coverage and balance at a small size without timing anything.
//
// Sizes and timing come from the environment:
//
//	TENURE_SCALE_INSTANCES   managers (default 10)
//	TENURE_SCALE_ENDPOINTS   endpoints (default 2000)
//	TENURE_SCALE_TIME        time scale of DefaultConfig's timing (default 0.1: lease TTL 3s)
//	TENURE_SCALE_SEED        seed of every random choice (default 1)
//
// The full size of the library-level goal (100 × 100,000 at the specification's timing):
//
//	TENURE_SCALE_INSTANCES=100 TENURE_SCALE_ENDPOINTS=100000 TENURE_SCALE_TIME=1 \
//	  go test -run '^$' -bench FleetScale -benchtime 1x -timeout 30m ./lease/

// scaleParams are one fleet-scale run's parameters.
type scaleParams struct {
	instances, endpoints int
	timeScale            float64
	seed                 int64
	skipSteady           bool // skip the steady-state window after balance
}

func scaleParamsFromEnv(tb testing.TB) scaleParams {
	tb.Helper()
	p := scaleParams{instances: 10, endpoints: 2000, timeScale: 0.1, seed: 1}
	intVar := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				tb.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	intVar("TENURE_SCALE_INSTANCES", &p.instances)
	intVar("TENURE_SCALE_ENDPOINTS", &p.endpoints)
	if v := os.Getenv("TENURE_SCALE_TIME"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 10) {
			tb.Fatalf("TENURE_SCALE_TIME=%q: want a time scale in (0, 10], e.g. 1 for the specification's timing", v)
		}
		p.timeScale = f
	}
	if v := os.Getenv("TENURE_SCALE_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			tb.Fatalf("TENURE_SCALE_SEED=%q: want an integer", v)
		}
		p.seed = n
	}
	return p
}

// scaleConfig is DefaultConfig with every duration multiplied by the time scale (DriftBound unchanged).
func scaleConfig(f float64) Config {
	c := DefaultConfig()
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	c.LeaseTTL, c.RenewInterval = s(c.LeaseTTL), s(c.RenewInterval)
	c.HeartbeatInterval, c.HeartbeatTTL = s(c.HeartbeatInterval), s(c.HeartbeatTTL)
	c.DiscoveryInterval, c.PollInterval = s(c.DiscoveryInterval), s(c.PollInterval)
	c.OpTimeout, c.SafetyMargin = s(c.OpTimeout), s(c.SafetyMargin)
	return c
}

// coverage follows the fleet's beliefs through Observe: how many instances believe they hold each
// endpoint, how many each instance holds, and the first moments at which every endpoint had exactly
// one believer (covered) and, in addition, every instance held floor(E/N) or ceil(E/N) (balanced).
type coverage struct {
	index  map[string]int // endpoint -> position; read-only after construction
	lo, hi int

	mu        sync.Mutex
	holders   []int          // per endpoint
	counts    map[string]int // per instance
	single    int            // endpoints with exactly one believer
	outside   int            // instances holding fewer than lo or more than hi
	first     time.Time      // the first grant
	covered   time.Time
	balanced  time.Time
	lastEvent time.Time
	acquired  int
	ended     int
	done      chan struct{} // closed once balanced
}

func newCoverage(eps []string, instances []string) *coverage {
	c := &coverage{
		index: make(map[string]int, len(eps)), holders: make([]int, len(eps)),
		counts: make(map[string]int, len(instances)), done: make(chan struct{}),
		lo: len(eps) / len(instances), hi: (len(eps) + len(instances) - 1) / len(instances),
	}
	for i, ep := range eps {
		c.index[ep] = i
	}
	for _, id := range instances {
		c.counts[id] = 0
		if c.lo > 0 {
			c.outside++
		}
	}
	return c
}

func (c *coverage) observe(e Event) {
	d := 0
	switch e.Kind {
	case EventAcquired:
		d = 1
	case EventReleased, EventLost, EventExpired:
		d = -1
	default:
		return
	}
	now := time.Now()
	i, ok := c.index[e.Endpoint]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastEvent = now
	if d > 0 {
		if c.acquired == 0 {
			c.first = now
		}
		c.acquired++
	} else {
		c.ended++
	}
	before := c.holders[i]
	c.holders[i] += d
	switch {
	case before == 1:
		c.single--
	case c.holders[i] == 1:
		c.single++
	}
	n := c.counts[e.Instance]
	in := func(n int) bool { return n >= c.lo && n <= c.hi }
	if in(n) && !in(n+d) {
		c.outside++
	} else if !in(n) && in(n+d) {
		c.outside--
	}
	c.counts[e.Instance] = n + d
	if c.single == len(c.holders) {
		if c.covered.IsZero() {
			c.covered = now
		}
		if c.outside == 0 && c.balanced.IsZero() {
			c.balanced = now
			close(c.done)
		}
	}
}

// scaleResult is what one fleet-scale run measured.
type scaleResult struct {
	params           scaleParams
	cfg              Config
	guardEnd         time.Time     // end of the fresh-dataset guard, on this process's clock
	started          time.Duration // when the last Start returned, relative to the guard's end
	first            time.Duration // the first grant, after the guard's end
	covered          time.Duration // first moment every endpoint had exactly one holder, after guard end
	balanced         time.Duration // ... and every instance held floor(E/N) or ceil(E/N)
	counts           []int         // per instance, from Held(), sorted
	redisCmdsPerSec  float64       // total_commands_processed over [guard end, balanced]
	clientCmdsPerSec float64       // commands the managers sent over the same window
	steadyRedisPerS  float64       // total_commands_processed per second over one RenewInterval after
	steadyClientPerS float64
	steadyWindow     time.Duration
	steadyEnds       int   // beliefs ended in the steady-state window
	steadyUnhealthy  int   // managers with an unhealthy link at its end
	peakRSS          int64 // VmHWM of this process, bytes
	redisPeak        int64 // used_memory_peak of the redis-server, bytes
	grants, ends     int   // acquired events, and released, lost or expired events, up to balance
	heldRedis        int   // lease keys in Redis naming the holder Held() reports
}

// cmdCounter counts the commands the managers send (each command of a pipeline counts).
type cmdCounter struct{ n atomic.Int64 }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// runFleetScale starts p.instances managers at once on a fresh private redis-server (no epoch key, so
// the first acquire arms the fresh-dataset guard for one lease TTL), waits until every endpoint is
// held by exactly one instance with exact balance, and checks that state from every manager's Held()
// and from the lease keys in Redis. It fails tb when coverage or balance is not reached within the
// guard plus two minutes plus one second per thousand endpoints, or when Held() and Redis disagree.
func runFleetScale(tb testing.TB, p scaleParams, logf func(format string, args ...any)) scaleResult {
	tb.Helper()
	ctx := context.Background()
	srv := redistest.Start(tb)
	admin := newClient(tb, srv.Addr())
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM; refused on some kernels

	eps := make(StaticTargets, p.endpoints)
	for i := range eps {
		eps[i] = fmt.Sprintf("ep-%06d", i)
	}
	ids := make([]string, p.instances)
	for i := range ids {
		ids[i] = fmt.Sprintf("inst-%03d", i)
	}
	cov := newCoverage(eps, ids)
	cfg := scaleConfig(p.timeScale)
	cfg.Targets, cfg.Observe = eps, cov.observe
	cfg.Logger = discardLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	cmds := &cmdCounter{}
	rnd := rand.New(rand.NewSource(p.seed))

	ms := make([]*Manager, p.instances)
	for i, id := range ids {
		c := cfg
		c.InstanceID = id
		c.Rand = rand.New(rand.NewSource(rnd.Int63()))
		client := newClient(tb, srv.Addr())
		client.AddHook(cmds)
		m, err := New(client, c)
		require.NoError(tb, err)
		ms[i] = m
	}
	runCtx, crash := context.WithCancel(ctx)
	defer crash()
	defer func() {
		var wg sync.WaitGroup
		for _, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(ctx, 2*cfg.LeaseTTL)
				defer cancel()
				_ = m.Stop(sctx)
			}()
		}
		wg.Wait()
	}()

	var wg sync.WaitGroup
	errs := make(chan error, len(ms))
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Start(runCtx); err != nil {
				errs <- fmt.Errorf("start %s: %w", m.ID(), err)
			}
		}()
	}
	allStarted := make(chan time.Time, 1)
	go func() { wg.Wait(); allStarted <- time.Now() }()

	guardEnd := waitGuardEnd(tb, admin, cfg)
	var statsAtGuard int64
	var clientAtGuard int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		time.Sleep(time.Until(guardEnd))
		statsAtGuard = redisCommands(admin)
		clientAtGuard = cmds.n.Load()
	}()

	limit := time.Until(guardEnd) + 2*time.Minute + time.Duration(p.endpoints)*time.Millisecond
	progress := func() string {
		cov.mu.Lock()
		single, outside := cov.single, cov.outside
		cov.mu.Unlock()
		unhealthy := 0
		for _, m := range ms {
			if !m.linkHealthy() {
				unhealthy++
			}
		}
		return fmt.Sprintf("%d of %d endpoints held by exactly one instance, %d of %d instances outside [%d, %d], %d with an unhealthy link",
			single, p.endpoints, outside, p.instances, cov.lo, cov.hi, unhealthy)
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	timeout := time.After(limit)
wait:
	for {
		select {
		case <-cov.done:
			break wait
		case <-tick.C:
			logf("%s after the guard's end: %s", time.Since(guardEnd).Round(time.Millisecond), progress())
		case <-timeout:
			tb.Fatalf("after %s: %s", limit, progress())
		}
	}
	statsAtBalance, clientAtBalance := redisCommands(admin), cmds.n.Load()
	<-sampled
	started := <-allStarted
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}

	cov.mu.Lock()
	res := scaleResult{
		params: p, cfg: cfg, guardEnd: guardEnd,
		started:  started.Sub(guardEnd),
		first:    cov.first.Sub(guardEnd),
		covered:  cov.covered.Sub(guardEnd),
		balanced: cov.balanced.Sub(guardEnd),
		grants:   cov.acquired, ends: cov.ended,
	}
	cov.mu.Unlock()
	if w := time.Since(guardEnd); w > 0 {
		res.redisCmdsPerSec = float64(statsAtBalance-statsAtGuard) / w.Seconds()
		res.clientCmdsPerSec = float64(clientAtBalance-clientAtGuard) / w.Seconds()
	}

	// The same state from the managers and from Redis. The managers are read one after another, so a
	// change between two reads could show an inconsistency that never existed: a failed check is
	// repeated for a while, and only one that never passes fails the run.
	verify := func() error {
		holder := make(map[string]string, p.endpoints)
		res.counts = res.counts[:0]
		for _, m := range ms {
			held := m.Held()
			res.counts = append(res.counts, len(held))
			for _, ep := range held {
				if other, dup := holder[ep]; dup {
					return fmt.Errorf("%s is held by %s and %s", ep, other, m.ID())
				}
				holder[ep] = m.ID()
			}
		}
		slices.Sort(res.counts)
		if len(holder) != p.endpoints {
			return fmt.Errorf("Held() over the fleet covers %d of %d endpoints", len(holder), p.endpoints)
		}
		if res.counts[0] < cov.lo || res.counts[len(res.counts)-1] > cov.hi {
			return fmt.Errorf("per-instance counts from Held() range over [%d, %d], want [%d, %d]",
				res.counts[0], res.counts[len(res.counts)-1], cov.lo, cov.hi)
		}
		res.heldRedis = 0
		for i := 0; i < len(eps); i += 1000 {
			batch := eps[i:min(i+1000, len(eps))]
			ks := make([]string, len(batch))
			for j, ep := range batch {
				ks[j] = cfg.KeyPrefix + "lease:" + ep
			}
			vals, err := admin.MGet(ctx, ks...).Result()
			if err != nil {
				return err
			}
			for j, v := range vals {
				s, _ := v.(string)
				if want := holder[batch[j]]; !strings.HasPrefix(s, want+":") {
					return fmt.Errorf("redis: %s holds %q, Held() says %s", ks[j], s, want)
				}
				res.heldRedis++
			}
		}
		return nil
	}
	for tries := 1; ; tries++ {
		err := verify()
		if err == nil {
			break
		}
		if tries == 50 {
			tb.Fatalf("after %d checks: %v", tries, err)
		}
		logf("check %d: %v (checking again)", tries, err)
		time.Sleep(cfg.PollInterval)
	}

	// Steady state: two renewal intervals (and at least one discovery round), in which nothing should
	// change.
	if p.skipSteady {
		res.peakRSS = vmHWM()
		res.redisPeak = redisInfoInt(admin, "memory", "used_memory_peak")
		return res
	}
	cov.mu.Lock()
	ended0 := cov.ended
	cov.mu.Unlock()
	r0, c0, t0 := redisCommands(admin), cmds.n.Load(), time.Now()
	time.Sleep(max(2*cfg.RenewInterval, cfg.DiscoveryInterval))
	w := time.Since(t0).Seconds()
	res.steadyRedisPerS = float64(redisCommands(admin)-r0) / w
	res.steadyClientPerS = float64(cmds.n.Load()-c0) / w
	res.steadyWindow = time.Since(t0)
	cov.mu.Lock()
	res.steadyEnds = cov.ended - ended0
	cov.mu.Unlock()
	for _, m := range ms {
		if !m.linkHealthy() {
			res.steadyUnhealthy++
		}
	}
	res.peakRSS = vmHWM()
	res.redisPeak = redisInfoInt(admin, "memory", "used_memory_peak")
	return res
}

// waitGuardEnd waits until the first acquire has armed the fresh-dataset guard and returns the guard's
// end on this process's clock: the epoch key holds it in Redis microseconds, on the wall clock of this
// host, where the private redis-server runs (read through TIME, the conversion would carry the delay of
// a reply from a Redis busy with the fleet's start).
func waitGuardEnd(tb testing.TB, c *redis.Client, cfg Config) time.Time {
	tb.Helper()
	ctx := context.Background()
	limit := time.Now().Add(2*time.Minute + cfg.LeaseTTL)
	for {
		v, err := c.Get(ctx, cfg.KeyPrefix+"epoch").Result()
		if err == nil {
			end, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			require.NoError(tb, err, "epoch key %q", v)
			now := time.Now()
			return now.Add(time.UnixMicro(end).Sub(now.Round(0)))
		}
		if time.Now().After(limit) {
			tb.Fatalf("no epoch key %sepoch after %s: no manager tried to acquire", cfg.KeyPrefix, 2*time.Minute+cfg.LeaseTTL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func redisInfoInt(c *redis.Client, section, field string) int64 {
	s, err := c.Info(context.Background(), section).Result()
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

func redisCommands(c *redis.Client) int64 {
	return redisInfoInt(c, "stats", "total_commands_processed")
}

// vmHWM is this process's peak resident set in bytes, or -1 where /proc is not available.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fs := strings.Fields(v)
			n, _ := strconv.ParseInt(fs[0], 10, 64)
			return n * 1024
		}
	}
	return -1
}

func (r scaleResult) report(w func(format string, args ...any)) {
	p := r.params
	w("fleet scale: %d instances × %d endpoints, time scale %g (lease TTL %s, renew %s, poll %s, discovery %s), seed %d, GOMAXPROCS %d",
		p.instances, p.endpoints, p.timeScale, r.cfg.LeaseTTL, r.cfg.RenewInterval, r.cfg.PollInterval,
		r.cfg.DiscoveryInterval, p.seed, runtime.GOMAXPROCS(0))
	w("fresh-dataset guard: Redis starts empty, so the first acquire writes the epoch key and every grant is refused for one lease TTL (%s) on Redis's clock; times below count from that guard's end", r.cfg.LeaseTTL)
	w("all %d managers started: %s (relative to the guard's end)", p.instances, r.started.Round(time.Millisecond))
	w("first grant: %s after the guard's end; grants %d, ends of beliefs %d up to balance", r.first.Round(time.Millisecond), r.grants, r.ends)
	w("full coverage (every endpoint believed held by exactly one instance): %s after the guard", r.covered.Round(time.Millisecond))
	w("full coverage with exact balance (every instance holds %d or %d): %s after the guard",
		p.endpoints/p.instances, (p.endpoints+p.instances-1)/p.instances, r.balanced.Round(time.Millisecond))
	w("per-instance counts from Held(): min %d, max %d; %d lease keys in Redis name the holder Held() reports",
		r.counts[0], r.counts[len(r.counts)-1], r.heldRedis)
	w("Redis commands per second from the guard's end to balance: %.0f (redis total_commands_processed, scripts' inner calls included), %.0f sent by the managers",
		r.redisCmdsPerSec, r.clientCmdsPerSec)
	if !r.params.skipSteady {
		w("steady state (%s after balance): %d beliefs ended, %d managers with an unhealthy link at its end; Redis commands per second %.0f (redis), %.0f sent",
			r.steadyWindow.Round(time.Millisecond), r.steadyEnds, r.steadyUnhealthy, r.steadyRedisPerS, r.steadyClientPerS)
	}
	w("peak RSS of this process (VmHWM): %.0f MiB; redis-server used_memory_peak: %.0f MiB",
		float64(r.peakRSS)/(1<<20), float64(r.redisPeak)/(1<<20))
}

// BenchmarkFleetScale measures, at the size and timing the environment gives (see the top of this file),
// the time from the end of the fresh-dataset guard to full coverage with exact balance.
func BenchmarkFleetScale(b *testing.B) {
	p := scaleParamsFromEnv(b)
	// Printed as it happens: a benchmark's own log is shortened.
	logf := func(format string, args ...any) { fmt.Printf("    "+format+"\n", args...) }
	for i := 0; i < b.N; i++ {
		r := runFleetScale(b, p, logf)
		r.report(logf)
		b.ReportMetric(r.covered.Seconds(), "s-to-coverage")
		b.ReportMetric(r.balanced.Seconds(), "s-to-balance")
		b.ReportMetric(float64(r.peakRSS)/(1<<20), "MiB-peak-RSS")
		b.ReportMetric(r.redisCmdsPerSec, "redis-cmds/s")
	}
}

// TestFleetScaleSmall runs a small fleet from a fresh dataset to full coverage and checks, from the
// managers' Held() and from Redis, that every endpoint has exactly one holder and every instance holds
// floor(E/N) or ceil(E/N). Nothing is timed beyond a generous limit.
func TestFleetScaleSmall(t *testing.T) {
	t.Parallel()
	// Time scale 0.2: OpTimeout 400ms, so that a loaded machine's scheduling delays do not count as
	// lost replies.
	r := runFleetScale(t, scaleParams{instances: 10, endpoints: 2000, timeScale: 0.2, seed: 1, skipSteady: true}, t.Logf)
	require.Equal(t, 200, r.counts[0])
	require.Equal(t, 200, r.counts[len(r.counts)-1])
	require.Equal(t, 2000, r.heldRedis)
	r.report(t.Logf)
}

// discardLogger drops every record without formatting it, unless TENURE_TEST_LOG=1.
func discardLogger() *slog.Logger {
	if os.Getenv("TENURE_TEST_LOG") == "1" {
		return quietLogger()
	}
	return slog.New(slog.DiscardHandler)
}
