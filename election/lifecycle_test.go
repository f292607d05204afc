package election

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// memBackend is an in-process Backend and Notifier: one holder per role, terms from a counter. fail
// makes the next calls of Leader fail, as a backend that is not reachable yet.
type memBackend struct {
	mu      sync.Mutex
	holders map[string]memHolding
	term    uint64
	fail    int // Leader calls left to fail
	leaders int // Leader calls so far
}

type memHolding struct {
	id   string
	term uint64
}

func newMemBackend() *memBackend { return &memBackend{holders: map[string]memHolding{}} }

func (b *memBackend) TryAcquire(_ context.Context, role, id string, _ time.Duration) (uint64, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.holders[role]; ok {
		if h.id == id {
			return h.term, true, nil
		}
		return 0, false, nil
	}
	b.term++
	b.holders[role] = memHolding{id: id, term: b.term}
	return b.term, true, nil
}

func (b *memBackend) Renew(_ context.Context, role, id string, term uint64, _ time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.holders[role]; h.id != id || h.term != term {
		return ErrNotHeld
	}
	return nil
}

func (b *memBackend) Release(_ context.Context, role, id string, term uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.holders[role]; h.id != id || h.term != term {
		return ErrNotHeld
	}
	delete(b.holders, role)
	return nil
}

func (b *memBackend) Leader(context.Context, string) (LeaderInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leaders++
	if b.fail > 0 {
		b.fail--
		return LeaderInfo{}, errors.New("connection refused")
	}
	return LeaderInfo{}, nil
}

func (b *memBackend) Subscribe(ctx context.Context, _ string) (<-chan struct{}, error) {
	out := make(chan struct{})
	go func() { <-ctx.Done(); close(out) }()
	return out, nil
}

func (b *memBackend) Close() error { return nil }

// electorGoroutines counts the goroutines running this package's code.
func electorGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "tenure/election.") && !strings.Contains(g, "tenure/election.electorGoroutines") &&
			!strings.Contains(g, "_test.go") {
			n++
		}
	}
	return n
}

func TestStartContextEndingWithoutStopLeavesNoGoroutine(t *testing.T) {
	t.Parallel()
	before := electorGoroutines()
	for i := range 5 {
		cfg := testConfig(t, "r", "a", uint64(i))
		e, err := New(newMemBackend(), cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		require.NoError(t, e.Start(ctx))
		require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
		cancel() // a crash: Stop is never called
		select {
		case <-e.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the elector did not stop when its Start context ended")
		}
	}
	var after int
	require.Eventually(t, func() bool { after = electorGoroutines(); return after <= before }, 5*time.Second, 5*time.Millisecond,
		"goroutines of this package left running")
}

func TestStartRidesOutAnUnavailableBackend(t *testing.T) {
	t.Parallel()
	b := newMemBackend()
	b.fail = 3
	reg := prometheus.NewRegistry()
	cfg := testConfig(t, "r", "a", 1)
	cfg.Registerer = reg
	e, err := New(b, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, e.Start(ctx), "Start retries until the backend answers")
	require.Equal(t, float64(3), metricValue(t, reg, "tenure_election_start_retries_total", "r"))
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
	require.NoError(t, e.Stop(context.Background()))

	// A backend that never answers: Start gives up when its context ends, and says why.
	b = newMemBackend()
	b.fail = 1 << 30
	e, err = New(b, testConfig(t, "r", "b", 2))
	require.NoError(t, err)
	sctx, scancel := context.WithTimeout(context.Background(), 3*testRetry)
	defer scancel()
	err = e.Start(sctx)
	require.ErrorIs(t, err, ErrBackendUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Greater(t, b.leaders, 1, "retried before giving up")
	<-e.Done()
}
