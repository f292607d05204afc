package lease

import (
	"context"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/promtest"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// releaseRecorder is a go-redis hook that records, for each endpoint, when the replies to the
// announced releases of it that deleted a lease came back.
type releaseRecorder struct {
	mu       sync.Mutex
	answered map[string][]time.Time
}

func (r *releaseRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *releaseRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.note(cmd)
		return err
	}
}

func (r *releaseRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		r.note(cmds...)
		return err
	}
}

func (r *releaseRecorder) note(cmds ...redis.Cmder) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		sc, ok := c.(*redis.Cmd)
		if !ok || sc.Err() != nil {
			continue
		}
		if n, _ := sc.Int64(); n != 1 {
			continue // not deleted: nothing was announced
		}
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.HasPrefix(s, "release ") {
				if f := strings.Fields(s); len(f) == 3 {
					if r.answered == nil {
						r.answered = map[string][]time.Time{}
					}
					r.answered[f[2]] = append(r.answered[f[2]], now)
				}
			}
		}
	}
}

// after returns the first answered release of ep after t.
func (r *releaseRecorder) after(ep string, t time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.answered[ep] {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// slowResubscribe, once armed, delays by d every dial that go-redis makes on its own to restore a
// PubSub's connection (its receive loop's and its health check's reconnections), and none other: a
// new subscription (PubSub.Subscribe) and the client's pooled connections dial at once.
type slowResubscribe struct {
	d       time.Duration
	armed   atomic.Bool
	pubsubs atomic.Int32 // dials made for a PubSub, of either kind: the stack check still matches go-redis
}

func (s *slowResubscribe) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		pubsub, redial := pubSubDial()
		if pubsub {
			s.pubsubs.Add(1)
		}
		if s.armed.Load() && redial {
			t := time.NewTimer(s.d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		return next(ctx, network, addr)
	}
}

// pubSubDial reports whether the dial that calls it is made for a go-redis PubSub (a PubSub method is
// on the stack), and whether it restores the PubSub's connection (PubSub.Subscribe is not).
func pubSubDial() (pubsub, redial bool) {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		switch {
		case strings.HasSuffix(f.Function, ".(*PubSub).Subscribe"):
			return true, false
		case strings.Contains(f.Function, "go-redis/v9.(*PubSub)."):
			pubsub = true
		}
		if !more {
			return pubsub, pubsub
		}
	}
}

func (s *slowResubscribe) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (s *slowResubscribe) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// An instance partitioned from Redis (both ways) while Redis restarts empty rejoins when the partition
// heals, and the others release its share to it: it must take each endpoint within a round trip or
// two of the release (announced on the channel), not when the holder's last renewal would have
// expired.
//
// The interleaving, as in a recorded run (explore seed 858433240): the restart closes c's pub/sub
// connection, and go-redis's PubSub, which re-subscribes on its own, keeps failing through the
// partition (then retrying only after a pause). When the partition heals, c's link probe is answered
// and c recovers (heartbeat, discovery, "join") and sends its acquires at once, while its PubSub has
// not subscribed again yet. a and b have not read c's heartbeat yet: c is refused, reads the PTTL of
// each refusing lease and leaves the endpoint out until that lease would expire (takeover.go). a and b
// then see c, end their in-flight polls (long ones here, so that c's acquires surely come first) and
// release, announcing each release, which is what tells c to try again at once; announced while c had
// no subscription, it never reached c, which took each endpoint at the old lease's expiry. In the
// recorded run c's link recovered 124 ms after the heal and the releases came 2 ms later, inside the
// time go-redis takes to subscribe again on its own even when the heal closes the dead connections,
// as the test's proxy does (a 100 ms pause after a failed attempt, then a dial and a handshake); with
// a half-open connection instead (a real partition closes nothing) go-redis notices only at its
// health check, 3 s by default. The test makes that race certain: go-redis's own re-dials of the
// PubSub wait resubscribeDelay once the partition heals.
func TestRejoinedInstanceTakesReleasesAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, newClient(t, srv.Addr()), "poll:"))
	eps := endpoints(9)
	cfg := testConfig()
	// A lease TTL well above RenewInterval: the defect made c wait for the old lease's expiry, at least
	// LeaseTTL - RenewInterval - longPoll (4.8s) after its release, far from the bound below.
	cfg.LeaseTTL = 6 * time.Second
	cfg.Targets = StaticTargets(eps) // the restart wipes the session keys
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	f := newFleet(t, srv.Addr(), cfg)
	t.Cleanup(func() {
		if o := f.log.overlaps(); len(o) > 0 {
			t.Errorf("overlapping polls by different instances:\n%v", o)
		}
	})
	// a's and b's polls last 200ms: a handoff waits for the poll in flight, so c's acquires (sent as
	// soon as its link is healthy) reach Redis before the releases.
	const longPoll = 200 * time.Millisecond
	f.pollDur = func(instance, ep string) time.Duration {
		if instance == "c" {
			return f.log.dur
		}
		return longPoll
	}
	const resubscribeDelay = 3 * time.Second // go-redis's default PubSub health check interval
	proxies := chaos.NewEmbedded(3)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("lease-rejoin-c", srv.Addr())
	require.NoError(t, err)
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = link.Heal()
		}
	})

	rel := &releaseRecorder{}
	slow := &slowResubscribe{d: resubscribeDelay}
	a := f.startAt("a", srv.Addr(), rel)
	b := f.startAt("b", srv.Addr(), rel)
	c := f.startAt("c", link.Addr(), slow)
	require.Positive(t, slow.pubsubs.Load(), "the hook recognises the dial of c's subscription")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)

	// Cut c off, both ways, and restart Redis empty behind the partition.
	require.NoError(t, link.Partition())
	require.Eventually(t, func() bool { return !c.linkHealthy() }, cfg.HeartbeatInterval+cfg.OpTimeout+settle, 10*time.Millisecond,
		"c's link goes unhealthy under the partition")
	require.NoError(t, srv.Restart())
	// a and b take every endpoint once the fresh-dataset guard (one LeaseTTL) is over.
	require.Eventually(t, func() bool {
		return len(a.Held())+len(b.Held()) == len(eps) && len(c.Held()) == 0
	}, cfg.LeaseTTL+settle, 20*time.Millisecond, "a and b hold every endpoint while c is cut off")

	refused := func() float64 {
		return promtest.Value(t, reg, "tenure_lease_acquisitions_total", func(l map[string]string) bool {
			return l["instance"] == "c" && l["result"] == "held"
		})
	}
	refusedBefore := refused()
	slow.armed.Store(true)
	require.NoError(t, link.Heal())
	healed = true
	healedAt := time.Now()
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond, "c rejoins and the fleet rebalances")

	// Bound, from the reply to a release to c's first poll of that endpoint: the physical bound is a
	// detection latency, RenewInterval + OpTimeout (c's next acquire pass and its call); the
	// announcement beats it by far (a round trip or two, then the first poll comes at once).
	// Tolerance: 1s of scheduling on a loaded two-core machine.
	bound := cfg.RenewInterval + cfg.OpTimeout + time.Second
	var worst time.Duration
	var taken []string
	for _, ep := range c.Held() {
		released, ok := rel.after(ep, healedAt)
		require.True(t, ok, "%s was released to c after the heal", ep)
		var first time.Time
		require.Eventually(t, func() bool { // a poll is recorded when it ends
			for _, p := range f.log.pollsOf(ep) {
				if p.instance == "c" && p.start.After(healedAt) && (first.IsZero() || p.start.Before(first)) {
					first = p.start
				}
			}
			return !first.IsZero()
		}, settle, 10*time.Millisecond, "c polls %s", ep)
		d := first.Sub(released)
		worst = max(worst, d)
		taken = append(taken, ep+" "+d.Round(time.Millisecond).String())
	}
	slices.Sort(taken)
	t.Logf("c polled its endpoints after their releases in: %s (bound %s); c's acquires refused (held) since the heal: %v",
		strings.Join(taken, ", "), bound, refused()-refusedBefore)
	require.LessOrEqual(t, worst, bound, "c took a released endpoint late: %s", strings.Join(taken, ", "))
}
