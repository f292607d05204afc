package lease

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// dialGate fails every dial while shut: a connection lost meanwhile stays lost.
type dialGate struct{ shut atomic.Bool }

func (g *dialGate) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if g.shut.Load() {
			return nil, errors.New("dial refused by the test")
		}
		return next(ctx, network, addr)
	}
}
func (g *dialGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g *dialGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A subscription lost without the link failing (its connection reset, the instance's other
// connections untouched) is restored by go-redis on its own, and what was announced meanwhile never
// arrives. An instance refused an endpoint, whose release it missed that way, must not wait for the
// refusing lease's expiry: the restored subscription's confirmation makes it try again. (acquire-resent,
// campaign seed 433024573: a newcomer's connections were reset while the release of an endpoint
// handed to it was on its way; it took the endpoint at the old lease's expiry, 1.9 s after the
// release, against a deadline 0.8 s earlier.)
func TestARestoredSubscriptionTriesAgain(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(ctx, admin, "poll:"))
	eps := endpoints(4)
	cfg := testConfig()
	cfg.Targets = StaticTargets(eps)
	cfg.LeaseTTL = 10 * time.Second // the refused endpoints' schedule: long after the release
	f := newFleet(t, srv.Addr(), cfg)
	polling := atomic.Bool{}
	f.pollDur = func(id, _ string) time.Duration {
		if id == "a" && polling.Load() {
			return 2 * time.Second // a's handoffs wait for a long poll: b is refused first
		}
		return 20 * time.Millisecond
	}
	a := f.start("a")
	require.Eventually(t, func() bool { return len(a.Held()) == len(eps) }, settle, 10*time.Millisecond)
	polling.Store(true)
	time.Sleep(100 * time.Millisecond) // every endpoint of a's in a long poll
	gate := &dialGate{}
	b := f.startAt("b", srv.Addr(), gate)
	refused := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.refusedUntil)
	}
	require.Eventually(t, func() bool { return refused() > 0 }, settle, time.Millisecond, "b is refused its share while a polls")
	polling.Store(false)

	// b's subscription is cut and cannot come back until a has released: the releases are lost.
	gate.shut.Store(true)
	require.NoError(t, admin.Do(ctx, "client", "kill", "type", "pubsub").Err())
	require.Eventually(t, func() bool { return len(a.Held()) == len(eps)/2 }, settle, 10*time.Millisecond, "a hands b's share over")
	gate.shut.Store(false)
	opened := time.Now()

	require.Eventually(t, func() bool { return len(b.Held()) == len(eps)/2 }, 10*time.Second, 5*time.Millisecond,
		"b took its share only at the refusing leases' expiry")
	took := time.Since(opened)
	t.Logf("b held its share %v after its subscription could be restored (the refusing leases expired up to %v later)", took.Round(time.Millisecond), cfg.LeaseTTL)
	require.Less(t, took, 2*time.Second, "b waited for the refusing leases' expiry")
}
