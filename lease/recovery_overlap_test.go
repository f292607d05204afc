package lease

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// recoveryRecorder is a go-redis hook that notes when each probe (PING) was answered and when each
// heartbeat (the SET of the instance's node key) was sent.
type recoveryRecorder struct {
	mu       sync.Mutex
	pings    []time.Time // answered
	beatsOut []time.Time // sent
}

func (r *recoveryRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recoveryRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "ping" && err == nil {
			r.mu.Lock()
			r.pings = append(r.pings, time.Now())
			r.mu.Unlock()
		}
		return err
	}
}

func (r *recoveryRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "set" && len(c.Args()) > 1 {
				if k, ok := c.Args()[1].(string); ok && bytes.Contains([]byte(k), []byte(":node:")) {
					r.mu.Lock()
					r.beatsOut = append(r.beatsOut, time.Now())
					r.mu.Unlock()
				}
			}
		}
		return next(ctx, cmds)
	}
}

// firstAfter returns the first of ts after t.
func firstAfter(mu *sync.Mutex, ts *[]time.Time, t time.Time) (time.Time, bool) {
	mu.Lock()
	defer mu.Unlock()
	for _, x := range *ts {
		if x.After(t) {
			return x, true
		}
	}
	return time.Time{}, false
}

// subscribedAfter returns when the first SUBSCRIBE sent after t was delivered (go-redis's own attempts
// to restore the old subscription, sent before, do not count).
func subscribedAfter(mu *sync.Mutex, read, delivered *[]time.Time, t time.Time) (time.Time, bool) {
	mu.Lock()
	defer mu.Unlock()
	for i, r := range *read {
		if r.After(t) {
			return (*delivered)[i], true
		}
	}
	return time.Time{}, false
}

// A recovering instance sets its new subscription up beside its heartbeat and discovery, not before
// them: on a slow link each is a round trip (the subscription a dial and a handshake as well), and in
// a row they cost the takeover of its own endpoints its bound (random-nemesis seed 945649462 in
// virtual time: five round trips one after another, 0.4 s past the bound). Here the link heals into a
// hold of every SUBSCRIBE for subHold: the heartbeat must go out as soon as the probe is answered,
// before the held subscription reaches Redis, and the instance still takes its endpoints back once
// the subscription is confirmed.
func TestLinkRecoveryDoesNotWaitForTheSubscriptionToBeat(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, newClient(t, srv.Addr()), "poll:"))
	eps := endpoints(3)
	cfg := testConfig()
	// A call bound long enough for a held subscription to be confirmed within it.
	cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 6*time.Second, 2*time.Second, 1500*time.Millisecond
	cfg.Targets = StaticTargets(eps)
	const subHold = time.Second
	f := newFleet(t, srv.Addr(), cfg)
	proxies := chaos.NewEmbedded(5)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("lease-recovery-overlap", srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Heal() })
	var heldMu sync.Mutex
	var subsRead, subsDelivered []time.Time // of each held SUBSCRIBE
	require.True(t, chaos.ObserveHeld(link, func(h chaos.Held) {
		if bytes.Contains(bytes.ToLower(h.Data), []byte("subscribe")) {
			heldMu.Lock()
			subsRead = append(subsRead, h.Read)
			subsDelivered = append(subsDelivered, h.Delivered)
			heldMu.Unlock()
		}
	}))

	rec := &recoveryRecorder{}
	c := f.startAt("c", link.Addr(), rec)
	require.Eventually(t, func() bool { return len(c.Held()) == len(eps) }, settle, 20*time.Millisecond, "c holds every endpoint")

	require.NoError(t, link.Partition())
	require.Eventually(t, func() bool { return !c.linkHealthy() }, cfg.HeartbeatInterval+cfg.OpTimeout+settle, 10*time.Millisecond,
		"c's link goes unhealthy under the partition")
	healed := time.Now()
	require.NoError(t, link.Hold(true, subHold, "subscribe")) // the partition ends; subscriptions are held

	var probed, beat, delivered time.Time
	require.Eventually(t, func() bool {
		var ok1, ok2, ok3 bool
		probed, ok1 = firstAfter(&rec.mu, &rec.pings, healed)
		if ok1 {
			beat, ok2 = firstAfter(&rec.mu, &rec.beatsOut, probed)
			delivered, ok3 = subscribedAfter(&heldMu, &subsRead, &subsDelivered, probed)
		}
		return ok1 && ok2 && ok3
	}, cfg.RenewInterval+subHold+settle, 10*time.Millisecond, "c's probe is answered, it beats, and its new subscription reaches Redis")
	t.Logf("after the probe's answer: heartbeat sent %v, held subscription delivered %v", beat.Sub(probed), delivered.Sub(probed))
	require.True(t, beat.Before(delivered), "the heartbeat (%v after the probe's answer) waited for the subscription (delivered %v after it)",
		beat.Sub(probed), delivered.Sub(probed))
	require.Eventually(t, func() bool { return len(c.Held()) == len(eps) }, cfg.LeaseTTL+settle, 20*time.Millisecond,
		"c takes its endpoints back")
}
