package election

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/lagtest"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// Test timing: TTL 2s, as the package's scenarios use.
const (
	testTTL   = 2 * time.Second
	testRenew = 500 * time.Millisecond
	testRetry = 400 * time.Millisecond
	testOp    = 300 * time.Millisecond
)

func uniqueRole(t testing.TB) string {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "role-" + hex.EncodeToString(b[:])
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("TENURE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}

func testConfig(t testing.TB, role, id string, seed uint64) Config {
	cfg := DefaultConfig()
	cfg.Role, cfg.InstanceID = role, id
	cfg.TTL, cfg.RenewInterval, cfg.RetryInterval, cfg.OpTimeout = testTTL, testRenew, testRetry, testOp
	cfg.SafetyMargin = 100 * time.Millisecond
	cfg.StartJitter = 50 * time.Millisecond
	cfg.HandoffTimeout = time.Second
	cfg.Rand = mrand.New(mrand.NewPCG(seed, 7))
	cfg.Logger = testLogger(t)
	return cfg
}

// redisEnv is a private redis-server and a client to it.
type redisEnv struct {
	srv *redisserver.Server
	c   *redis.Client
}

func newRedisEnv(t testing.TB) *redisEnv {
	t.Helper()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{
		Addr: srv.Addr(), ContextTimeoutEnabled: true,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
		MinRetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	return &redisEnv{srv: srv, c: c}
}

// redisPing is a lag watch's ping of a test's Redis.
func redisPing(c *redis.Client) lagtest.Ping {
	return lagtest.Ping{Name: "Redis", Do: func(ctx context.Context) error { return c.Ping(ctx).Err() }}
}

// span is one interval during which an instance acted (or believed it led).
type span struct {
	id         string
	term       uint64
	start, end time.Time
}

// record keeps what every instance did: acting spans (from OnStartedLeading until its context ended)
// and belief spans (from the state change to Leader until the change away from it).
type record struct {
	mu     sync.Mutex
	acting []span
	belief []span
	open   map[string]span
	losses []string // why each leadership ended, in order
	wg     sync.WaitGroup
}

func newRecord() *record { return &record{open: map[string]span{}} }

// onStarted is an OnStartedLeading callback that acts until its context ends.
func (r *record) onStarted(id string, started chan<- uint64) func(context.Context, uint64) {
	return func(ctx context.Context, term uint64) {
		r.wg.Add(1)
		defer r.wg.Done()
		s := span{id: id, term: term, start: time.Now()}
		if started != nil {
			select {
			case started <- term:
			default:
			}
		}
		<-ctx.Done()
		s.end = time.Now()
		r.mu.Lock()
		r.acting = append(r.acting, s)
		r.mu.Unlock()
	}
}

// watch drains e's events into belief spans until e is done; it returns a channel of Acquired events.
func (r *record) watch(e *Elector) <-chan Event {
	acquired := make(chan Event, 64)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case ev := <-e.Events():
				r.note(e.ID(), ev)
				if ev.Type == Acquired {
					select {
					case acquired <- ev:
					default:
					}
				}
			case <-e.Done():
				for {
					select {
					case ev := <-e.Events():
						r.note(e.ID(), ev)
					default:
						return
					}
				}
			}
		}
	}()
	return acquired
}

func (r *record) note(id string, ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Type == Lost {
		r.losses = append(r.losses, fmt.Sprintf("%s lost term %d: %v", id, ev.Term, ev.Err))
	}
	if ev.Type != StateChanged {
		return
	}
	switch {
	case ev.State == Leader:
		r.open[id] = span{id: id, start: ev.Time}
	case ev.Prev == Leader:
		s := r.open[id]
		delete(r.open, id)
		s.end = ev.Time
		r.belief = append(r.belief, s)
	}
}

// check fails the test when two instances' spans overlap. Call it once every elector is done.
func (r *record) check(t testing.TB) {
	t.Helper()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, spans := range map[string][]span{"acting": r.acting, "believing": r.belief} {
		sorted := append([]span(nil), spans...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
		for i := 1; i < len(sorted); i++ {
			a, b := sorted[i-1], sorted[i]
			if a.id != b.id && b.start.Before(a.end) {
				t.Errorf("two leaders %s at once: %s (term %d) until %s, %s (term %d) from %s",
					name, a.id, a.term, a.end.Format(time.StampMicro), b.id, b.term, b.start.Format(time.StampMicro))
			}
		}
	}
	var last uint64
	sorted := append([]span(nil), r.acting...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
	for _, s := range sorted {
		if s.term <= last {
			t.Errorf("term %d of %s not above the previous term %d", s.term, s.id, last)
		}
		last = s.term
	}
}

// lossesSoFar returns why each leadership that ended so far ended.
func (r *record) lossesSoFar() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.losses)
}

// leaders returns the electors that believe they lead.
func leaders(es []*Elector) []*Elector {
	var out []*Elector
	for _, e := range es {
		if e.IsLeader() {
			out = append(out, e)
		}
	}
	return out
}

// stopAll stops every elector still running.
func stopAll(t testing.TB, es []*Elector) {
	t.Helper()
	for _, e := range es {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := e.Stop(ctx); err != nil && err != ErrNotStarted {
			t.Errorf("stop %s: %v", e.ID(), err)
		}
		cancel()
	}
}

// leaderReporting makes memBackend report its holder, as the real backends do.
type leaderReporting struct{ *memBackend }

func (b *leaderReporting) Leader(context.Context, string) (LeaderInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.holders["r"]
	return LeaderInfo{ID: h.id, Term: h.term}, nil
}
