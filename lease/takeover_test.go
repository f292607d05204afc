package lease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// A crashed holder's endpoints are polled by survivors within about one TTL of the crash even when the
// discovery interval is far longer: the survivors act on the expiries they read, not on their ticks.
func TestCrashTakeoverAtExpiry(t *testing.T) {
	t.Parallel()
	f, _, eps := realFleet(t, 9)
	cfg := testConfig()
	cfg.LeaseTTL, cfg.HeartbeatTTL = 2*time.Second, 2*time.Second
	cfg.RenewInterval, cfg.HeartbeatInterval = time.Second, 500*time.Millisecond
	cfg.DiscoveryInterval = time.Minute // a takeover that waited for a tick would fail the test
	cfg.OpTimeout = 300 * time.Millisecond
	f.cfg = cfg
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	victim := f.members["c"].m.Held()
	f.crash("c")
	crashed := time.Now()
	require.Eventually(t, func() bool { return f.settled(eps, 4, 5) }, settle, 20*time.Millisecond,
		"survivors take over without a discovery tick")
	firstPoll := func(ep string) time.Time {
		var first time.Time
		for _, p := range f.log.pollsOf(ep) {
			if p.instance != "c" && p.start.After(crashed) && (first.IsZero() || p.start.Before(first)) {
				first = p.start
			}
		}
		return first
	}
	for _, ep := range victim {
		require.Eventually(t, func() bool { return !firstPoll(ep).IsZero() }, settle, 10*time.Millisecond,
			"%s polled by a survivor", ep)
		took := firstPoll(ep).Sub(crashed)
		t.Logf("%s taken over %s after the crash", ep, took)
		// Its last renewal came at most one RenewInterval (and a round trip) before the crash, so the
		// lease cannot have expired earlier than this; a generous allowance above the TTL covers a
		// loaded machine, and is still far below the discovery interval.
		require.GreaterOrEqual(t, took, cfg.LeaseTTL-cfg.RenewInterval-100*time.Millisecond, "%s taken before its lease could expire", ep)
		require.Less(t, took, cfg.LeaseTTL+time.Second, "%s taken over late", ep)
	}
}

func TestFirstExpiry(t *testing.T) {
	t.Parallel()
	sent := time.Unix(100, 0)
	cmd := func(d time.Duration) *redis.DurationCmd {
		c := redis.NewDurationCmd(nil, time.Millisecond)
		c.SetVal(d)
		return c
	}
	_, ok := firstExpiry(sent, nil)
	require.False(t, ok, "nothing read, nothing scheduled")
	_, ok = firstExpiry(sent, []*redis.DurationCmd{cmd(-1)})
	require.False(t, ok, "a key without a TTL is not waited for")
	at, ok := firstExpiry(sent, []*redis.DurationCmd{cmd(900 * time.Millisecond), cmd(300 * time.Millisecond), cmd(-1)})
	require.True(t, ok)
	require.Equal(t, sent.Add(300*time.Millisecond), at, "the first expiry")
	at, ok = firstExpiry(sent, []*redis.DurationCmd{cmd(300 * time.Millisecond), cmd(-2)})
	require.True(t, ok)
	require.Equal(t, sent, at, "a key already gone is due at once")
}

func TestAlarmFiresAtTheEarliestArmedTime(t *testing.T) {
	t.Parallel()
	kick := make(chan struct{}, 1)
	a := newAlarm(clock.Real{}, kick)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { a.run(done); close(stopped) }()
	defer func() { close(done); <-stopped }()

	start := time.Now()
	a.arm(start.Add(time.Hour))
	a.arm(start.Add(50 * time.Millisecond))
	a.arm(start.Add(2 * time.Hour)) // later: changes nothing
	select {
	case <-kick:
	case <-time.After(10 * time.Second):
		t.Fatal("the alarm did not fire")
	}
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "fired early")
	require.Eventually(t, func() bool { return a.pending().IsZero() }, 5*time.Second, time.Millisecond, "disarmed once fired")

	a.set(time.Now().Add(time.Hour))
	a.set(time.Time{}) // disarm
	require.True(t, a.pending().IsZero())
	a.set(time.Now().Add(20 * time.Millisecond))
	select {
	case <-kick:
	case <-time.After(10 * time.Second):
		t.Fatal("the alarm set after a disarm did not fire")
	}
}

// An endpoint held by another holding is tried again when that lease expires (or its release is
// announced), not on every acquire pass: passes run for other reasons (ticks, releases, lost leases),
// and re-sending an acquire and a PTTL for every endpoint held elsewhere on each of them was most of a
// large fleet's traffic during a rolling start.
func TestRefusedEndpointWaitsForItsExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr())
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, admin, "poll:"))
	cfg := testConfig()
	cfg.RenewInterval = 100 * time.Millisecond // an acquire pass every 100 ms or less
	cfg.OpTimeout = 80 * time.Millisecond
	cfg.InstanceID, cfg.Targets, cfg.Logger = "solo", StaticTargets{"held", "free"}, quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	acquiredAt := make(chan time.Time, 4)
	cfg.Observe = func(e Event) {
		if e.Kind == EventAcquired && e.Endpoint == "held" {
			acquiredAt <- time.Now()
		}
	}
	require.NoError(t, admin.Set(ctx, "poll:lease:held", "other:1", 1500*time.Millisecond).Err())
	expires := time.Now().Add(1500 * time.Millisecond)
	acq := &acquireCounter{}
	client := newClient(t, srv.Addr())
	client.AddHook(acq)
	m, err := New(client, cfg)
	require.NoError(t, err)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, m.Start(mctx))
	defer func() { _ = m.Stop(ctx) }()

	select {
	case at := <-acquiredAt:
		// Not before the key could expire; promptly after (a loaded machine's scheduling allowed).
		require.False(t, at.Before(expires.Add(-50*time.Millisecond)), "acquired %s before the expiry", expires.Sub(at))
		require.Less(t, at.Sub(expires), time.Second, "acquired late")
	case <-time.After(10 * time.Second):
		t.Fatal("the endpoint was not acquired after its lease expired")
	}
	// "free" once, "held" once refused and once granted; a pass per tick would have sent about 15.
	require.LessOrEqual(t, acq.n.Load(), int64(4), "acquires sent")

	// A release announced by the holder is acted on at once, however long its lease had left.
	require.NoError(t, m.Stop(ctx))
	require.NoError(t, admin.Set(ctx, "poll:lease:held", "other:2", 20*time.Second).Err())
	cfg.InstanceID = "solo2"
	m2, err := New(newClient(t, srv.Addr()), cfg)
	require.NoError(t, err)
	require.NoError(t, m2.Start(mctx))
	defer func() { _ = m2.Stop(ctx) }()
	require.Eventually(t, func() bool {
		m2.mu.Lock()
		defer m2.mu.Unlock()
		_, waiting := m2.refusedUntil["held"]
		return waiting
	}, 5*time.Second, 5*time.Millisecond, "the refusal is remembered")
	require.NoError(t, admin.Del(ctx, "poll:lease:held").Err())
	released := time.Now()
	require.NoError(t, admin.Publish(ctx, m2.keys.channel(), "release other held").Err())
	select {
	case at := <-acquiredAt:
		require.Less(t, at.Sub(released), time.Second, "the announced release was not acted on at once")
	case <-time.After(10 * time.Second):
		t.Fatal("the announced release was not acted on")
	}
}

// Endpoints refused until different expiries are each tried at their own: the pass that the first
// expiry starts leaves the others out, and must keep the schedule for them (not wait for a tick).
func TestRefusedEndpointsEachTriedAtTheirExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := newClient(t, srv.Addr())
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, admin, "poll:"))
	cfg := testConfig()
	cfg.RenewInterval, cfg.HeartbeatInterval = 3*time.Second, 3*time.Second // ticks too rare to help
	cfg.LeaseTTL, cfg.HeartbeatTTL = 9*time.Second, 9*time.Second
	cfg.DiscoveryInterval = 3 * time.Second
	cfg.OpTimeout = 300 * time.Millisecond
	cfg.InstanceID, cfg.Targets, cfg.Logger = "solo", StaticTargets{"early", "late"}, quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	var mu sync.Mutex
	acquired := map[string]time.Time{}
	cfg.Observe = func(e Event) {
		if e.Kind == EventAcquired {
			mu.Lock()
			acquired[e.Endpoint] = time.Now()
			mu.Unlock()
		}
	}
	start := time.Now()
	require.NoError(t, admin.Set(ctx, "poll:lease:early", "other:1", 400*time.Millisecond).Err())
	require.NoError(t, admin.Set(ctx, "poll:lease:late", "other:2", 1200*time.Millisecond).Err())
	m, err := New(newClient(t, srv.Addr()), cfg)
	require.NoError(t, err)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, m.Start(mctx))
	defer func() { _ = m.Stop(ctx) }()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(acquired) == 2 }, 10*time.Second,
		5*time.Millisecond, "both acquired")
	mu.Lock()
	defer mu.Unlock()
	// Each within a generous allowance of its expiry, far below the 3 s tick.
	require.Less(t, acquired["early"].Sub(start), 400*time.Millisecond+time.Second, "early")
	require.Less(t, acquired["late"].Sub(start), 1200*time.Millisecond+time.Second, "late")
}
