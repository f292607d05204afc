package lease

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testConfig is the compressed time scale of the integration tests: a tenth of the specification.
func testConfig() Config {
	c := DefaultConfig()
	c.LeaseTTL = 3 * time.Second
	c.RenewInterval = time.Second
	c.HeartbeatInterval = time.Second
	c.HeartbeatTTL = 3 * time.Second
	c.DiscoveryInterval = time.Second
	c.PollInterval = 50 * time.Millisecond
	c.OpTimeout = 500 * time.Millisecond
	c.SafetyMargin = 200 * time.Millisecond
	return c
}

func newClient(t testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: 3}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// quietLogger discards logs unless TENURE_TEST_LOG=1, which prints them at debug level.
func quietLogger() *slog.Logger {
	if os.Getenv("TENURE_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// pollRecord is one poll as the simulated endpoint saw it, on the test's monotonic clock.
type pollRecord struct {
	instance, endpoint string
	token              uint64
	start, end         time.Time
}

// pollLog is a shared endpoint service: every manager in a test polls through it.
type pollLog struct {
	mu       sync.Mutex
	dur      time.Duration
	polls    []pollRecord
	events   []Event
	renewals []Event
	maxToken map[string]uint64
}

func newPollLog(dur time.Duration) *pollLog {
	return &pollLog{dur: dur, maxToken: make(map[string]uint64)}
}

func (l *pollLog) pollFunc(instance string) PollFunc { return l.pollFor(instance, nil) }

// pollFor is pollFunc with each poll lasting dur(endpoint) (l.dur when dur is nil).
func (l *pollLog) pollFor(instance string, dur func(endpoint string) time.Duration) PollFunc {
	return func(ctx context.Context, p Poll) error {
		start := time.Now()
		if ctx.Err() != nil {
			// A call made with a context already done never leaves the caller (a crash cancels the
			// holding's context, and a poll loop past its check may still call): it reaches no
			// endpoint, and is not recorded as a poll.
			return ctx.Err()
		}
		d := l.dur
		if dur != nil {
			d = dur(p.Endpoint)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		end := time.Now()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.polls = append(l.polls, pollRecord{instance, p.Endpoint, p.Token, start, end})
		if p.Token > l.maxToken[p.Endpoint] {
			l.maxToken[p.Endpoint] = p.Token
		}
		return nil
	}
}

// observe records belief changes in events and renewals (which only move a deadline) in renewals.
func (l *pollLog) observe(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Kind == EventRenewed {
		l.renewals = append(l.renewals, e)
		return
	}
	l.events = append(l.events, e)
}

func (l *pollLog) renewalsFor(endpoint string) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.renewals {
		if e.Endpoint == endpoint {
			out = append(out, e)
		}
	}
	return out
}

func (l *pollLog) eventsFor(endpoint string) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.events {
		if endpoint == "" || e.Endpoint == endpoint {
			out = append(out, e)
		}
	}
	return out
}

func (l *pollLog) pollsOf(endpoint string) []pollRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []pollRecord
	for _, p := range l.polls {
		if p.endpoint == endpoint {
			out = append(out, p)
		}
	}
	return out
}

// overlaps returns every pair of polls of one endpoint by different instances that overlap in time.
func (l *pollLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	by := map[string][]pollRecord{}
	for _, p := range l.polls {
		by[p.endpoint] = append(by[p.endpoint], p)
	}
	var out []string
	for ep, ps := range by {
		slices.SortFunc(ps, func(a, b pollRecord) int { return a.start.Compare(b.start) })
		for i := range ps {
			for j := i + 1; j < len(ps) && ps[j].start.Before(ps[i].end); j++ {
				if ps[j].instance != ps[i].instance {
					out = append(out, fmt.Sprintf("%s: %s [%v] and %s [%v] overlap by %s", ep,
						ps[i].instance, ps[i].token, ps[j].instance, ps[j].token, ps[i].end.Sub(ps[j].start)))
				}
			}
		}
	}
	return out
}

// fleet runs managers against one Redis with a shared poll log.
type fleet struct {
	t    *testing.T
	addr string
	cfg  Config
	log  *pollLog
	rnd  *rand.Rand
	// pollDur, when set, is how long each poll by an instance of an endpoint lasts (else the log's).
	pollDur func(instance, endpoint string) time.Duration
	mu      sync.Mutex
	members map[string]*member
}

type member struct {
	m      *Manager
	cancel context.CancelFunc
}

func newFleet(t *testing.T, addr string, cfg Config) *fleet {
	return &fleet{t: t, addr: addr, cfg: cfg, log: newPollLog(20 * time.Millisecond), rnd: rand.New(rand.NewSource(1)), members: map[string]*member{}}
}

// start builds and starts one manager named id with its own client.
func (f *fleet) start(id string) *Manager {
	f.t.Helper()
	return f.startAt(id, f.addr)
}

// startAt is start with the manager's client dialling addr (a proxy in front of Redis, say) and
// carrying hooks.
func (f *fleet) startAt(id, addr string, hooks ...redis.Hook) *Manager {
	f.t.Helper()
	m := f.buildAt(id, addr, hooks...)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(f.t, m.Start(ctx))
	f.mu.Lock()
	f.members[id] = &member{m, cancel}
	f.mu.Unlock()
	f.t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = m.Stop(sctx)
		cancel()
	})
	return m
}

func (f *fleet) build(id string) *Manager {
	f.t.Helper()
	return f.buildAt(id, f.addr)
}

func (f *fleet) buildAt(id, addr string, hooks ...redis.Hook) *Manager {
	f.t.Helper()
	cfg := f.cfg
	cfg.InstanceID = id
	cfg.Poll = f.log.pollFunc(id)
	if f.pollDur != nil {
		cfg.Poll = f.log.pollFor(id, func(ep string) time.Duration { return f.pollDur(id, ep) })
	}
	cfg.Observe = f.log.observe
	cfg.Logger = quietLogger()
	f.mu.Lock()
	cfg.Rand = rand.New(rand.NewSource(f.rnd.Int63()))
	f.mu.Unlock()
	client := newClient(f.t, addr)
	for _, h := range hooks {
		client.AddHook(h)
	}
	m, err := New(client, cfg)
	require.NoError(f.t, err)
	return m
}

func (f *fleet) crash(id string) {
	f.mu.Lock()
	mb := f.members[id]
	delete(f.members, id)
	f.mu.Unlock()
	mb.cancel()
}

func (f *fleet) stop(id string) {
	f.t.Helper()
	f.mu.Lock()
	mb := f.members[id]
	delete(f.members, id)
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(f.t, mb.m.Stop(ctx))
}

// holdings returns endpoint -> holders over the live members.
func (f *fleet) holdings() (map[string][]string, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	by := map[string][]string{}
	counts := map[string]int{}
	for id, mb := range f.members {
		h := mb.m.Held()
		counts[id] = len(h)
		for _, ep := range h {
			by[ep] = append(by[ep], id)
		}
	}
	return by, counts
}

// settled reports whether every endpoint in eps is held by exactly one live member and every member
// holds between lo and hi endpoints.
func (f *fleet) settled(eps []string, lo, hi int) bool {
	by, counts := f.holdings()
	for _, ep := range eps {
		if len(by[ep]) != 1 {
			return false
		}
	}
	for _, n := range counts {
		if n < lo || n > hi {
			return false
		}
	}
	return len(by) == len(eps)
}

func endpoints(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ep%02d", i)
	}
	return out
}

func addSessions(t testing.TB, c redis.UniversalClient, eps []string) {
	t.Helper()
	for _, ep := range eps {
		require.NoError(t, c.Set(context.Background(), "session:"+ep, fmt.Sprintf(`{"id":%q,"paused":false}`, ep), 0).Err())
	}
}
