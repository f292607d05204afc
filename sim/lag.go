package sim

import (
	"context"
	"errors"
	"math"
	"runtime/metrics"
	"slices"
	"sync"
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
}

// realLagSources measures the real runtime, on the run's clock now, pinging the backend with ping.
func realLagSources(now func() time.Duration, ping func(ctx context.Context) error) lagSources {
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
		ping: ping,
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
	})
	return m.result
}

// summarizeLag builds the record: every window's signals summarised, the windows at or above floor kept.
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
		if max(w.Canary, w.Sched, w.Ping) >= floor {
			out.Samples = append(out.Samples, w)
		}
	}
	return out
}
