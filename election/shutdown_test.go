package election

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// releaseWatching records, at each release, whether the leader's work had returned by then.
type releaseWatching struct {
	*leaderReporting
	workDone *atomic.Bool
	released chan bool // the value of workDone at each successful release
}

func (b *releaseWatching) Release(ctx context.Context, role, id string, term uint64) error {
	err := b.leaderReporting.Release(ctx, role, id, term)
	if err == nil {
		b.released <- b.workDone.Load()
	}
	return err
}

func (b *releaseWatching) held() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.holders["r"]
	return ok
}

// leaderThenCancelled starts an elector with cfg on a backend that records its releases, lets it lead,
// then cancels Start's context: the elector is done, and the holding still in place.
func leaderThenCancelled(t *testing.T, cfg Config) (*releaseWatching, *Elector) {
	t.Helper()
	b := &releaseWatching{leaderReporting: &leaderReporting{newMemBackend()}, workDone: &atomic.Bool{}, released: make(chan bool, 4)}
	cfg.OnStartedLeading = func(ctx context.Context, _ uint64) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // work that takes a moment to wind down
		b.workDone.Store(true)
	}
	e, err := New(b, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, e.Start(ctx))
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)

	cancel()
	<-e.Done()
	require.False(t, e.IsLeader())
	require.True(t, b.held(), "the cancelled context alone releases nothing")
	return b, e
}

// A Start context that ends releases nothing by itself (without Stop it is a crash); a Stop that
// follows waits for the leader's work, then releases the holding.
func TestStopAfterStartContextEndedReleases(t *testing.T) {
	t.Parallel()
	b, e := leaderThenCancelled(t, testConfig(t, "r", "a", 1))
	require.NoError(t, e.Stop(context.Background()))
	require.False(t, b.held(), "Stop releases what the cancelled context left held")
	require.True(t, <-b.released, "released only once the leader's work had returned")
	require.NoError(t, e.Stop(context.Background()), "a second Stop finds nothing left")
	require.Empty(t, b.released, "released once")
}

// lostAcquire grants the role, then withholds the reply until the caller's context ends, as a reply
// lost when the process is interrupted.
type lostAcquire struct {
	*leaderReporting
	granted chan struct{}
}

func (b *lostAcquire) TryAcquire(ctx context.Context, role, id string, ttl time.Duration) (uint64, bool, error) {
	if _, _, err := b.leaderReporting.TryAcquire(ctx, role, id, ttl); err != nil {
		return 0, false, err
	}
	close(b.granted)
	<-ctx.Done()
	return 0, false, ctx.Err()
}

// An acquire in flight when Start's context ends may have taken effect: Stop asks who leads, and
// releases a holding in this instance's name.
func TestStopSettlesAnAcquireInFlightAtCancellation(t *testing.T) {
	t.Parallel()
	b := &lostAcquire{leaderReporting: &leaderReporting{newMemBackend()}, granted: make(chan struct{})}
	cfg := testConfig(t, "r", "a", 1)
	cfg.OpTimeout = 10 * time.Second // the acquire waits for the cancellation, not its timeout
	cfg.RenewInterval = 10 * time.Second
	cfg.TTL = 30 * time.Second
	e, err := New(b, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, e.Start(ctx))
	<-b.granted
	cancel()
	<-e.Done()
	require.False(t, e.IsLeader())
	require.Equal(t, "a", b.holders["r"].id, "the grant took effect on the backend")

	require.NoError(t, e.Stop(context.Background()))
	b.mu.Lock()
	_, held := b.holders["r"]
	b.mu.Unlock()
	require.False(t, held, "Stop released the holding the lost reply left")
}
