package lease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// mutableTargets is a TargetSource the test changes while managers run.
type mutableTargets struct {
	mu  sync.Mutex
	eps []string
}

func (s *mutableTargets) set(eps ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eps = append([]string(nil), eps...)
}

func (s *mutableTargets) Targets(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.eps...), nil
}

// gate is a go-redis hook that, once armed, holds back the first command matching match (alone or
// in a pipeline) until let go, then sends it whatever the caller's context says by then: a request
// that sat on the wire and lands late. after runs once the held command has been answered.
type gate struct {
	match func(args []any) bool
	armed atomic.Bool
	hit   chan struct{} // closed when the held command arrives
	go_   chan struct{} // close to let it through
	sent  chan struct{} // closed once the held command has been answered and after has run
	after func()
	// honour makes the hold end early when the caller's context ends (the command is then not sent).
	honour bool
	seen   func(args []any) // sees every command (optional)
}

func newGate(match func(args []any) bool) *gate {
	return &gate{match: match, hit: make(chan struct{}), go_: make(chan struct{}), sent: make(chan struct{})}
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return g.PipelineOne(ctx, []redis.Cmder{cmd}, func(ctx context.Context, cmds []redis.Cmder) error {
			return next(ctx, cmds[0])
		})
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return g.PipelineOne(ctx, cmds, next) }
}

func (g *gate) PipelineOne(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error {
	held := false
	for _, c := range cmds {
		if g.seen != nil {
			g.seen(c.Args())
		}
		if !held && g.armed.Load() && g.match(c.Args()) && g.armed.CompareAndSwap(true, false) {
			held = true
		}
	}
	if !held {
		return next(ctx, cmds)
	}
	close(g.hit)
	if g.honour {
		select {
		case <-g.go_:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		<-g.go_
	}
	err := next(context.WithoutCancel(ctx), cmds)
	if g.after != nil {
		g.after()
	}
	close(g.sent)
	return err
}

func argsHave(args []any, s string) bool {
	for _, a := range args {
		if fmt.Sprint(a) == s {
			return true
		}
	}
	return false
}

// A handoff's release is held back on the wire; the endpoint is assigned back to the same instance
// meanwhile. The instance must not acquire while its release is in flight, and when the late release
// lands it must not delete a lease the instance believes it holds.
func TestStaleReleaseCannotDeleteReacquiredLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, c, "poll:"))
	targets := &mutableTargets{}
	targets.set("x")
	cfg := testConfig()
	cfg.Targets = targets
	f := newFleet(t, srv.Addr(), cfg)

	var acquiresWhileHeld atomic.Int32
	var m *Manager
	var violation atomic.Value
	g := newGate(func(args []any) bool { return argsHave(args, releaseScript.Hash()) && argsHave(args, "poll:lease:x") })
	g.seen = func(args []any) {
		select {
		case <-g.hit:
			if argsHave(args, acquireScript.Hash()) && argsHave(args, "poll:lease:x") {
				acquiresWhileHeld.Add(1)
			}
		default:
		}
	}
	g.after = func() {
		// The late release has landed. Whatever the instance believes now must be backed by the key.
		held := false
		for _, ep := range m.Held() {
			held = held || ep == "x"
		}
		if n := c.Exists(ctx, "poll:lease:x").Val(); held && n == 0 {
			violation.Store("the late release deleted the lease the instance believes it holds")
		}
	}
	m = f.startAt("a", srv.Addr(), g)
	require.Eventually(t, func() bool { return len(m.Held()) == 1 }, settle, 10*time.Millisecond)

	g.armed.Store(true)
	targets.set() // x goes away: handoff, release (held back)
	m.kick(m.discoverKick)
	select {
	case <-g.hit:
	case <-time.After(settle):
		t.Fatal("the handoff release was never sent")
	}
	targets.set("x") // and comes back to the same instance
	m.kick(m.discoverKick)
	// Give a re-acquire every chance to happen while the release is in flight (it must not).
	deadline := time.Now().Add(3 * cfg.RenewInterval)
	for time.Now().Before(deadline) && acquiresWhileHeld.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := acquiresWhileHeld.Load(); n > 0 {
		t.Errorf("acquired %d times while its own release was in flight", n)
	}
	close(g.go_)
	select {
	case <-g.sent:
	case <-time.After(settle):
		t.Fatal("the held release never completed")
	}

	require.Eventually(t, func() bool { return len(m.Held()) == 1 }, settle, 10*time.Millisecond, "re-acquired after the release")
	if v := violation.Load(); v != nil {
		t.Error(v)
	}
	v, err := c.Get(ctx, "poll:lease:x").Result()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(v, "a:"), "the lease names the holding: %q", v)
	for _, e := range f.log.eventsFor("x") {
		require.NotEqual(t, EventLost, e.Kind, "belief ended by a lost lease: %+v", e)
	}
}

// An RDB snapshot taken before the leases, loaded by a restart, brings the epoch key back without
// the leases. The guard must re-arm all the same; FLUSHALL without a restart must re-arm it too.
func TestSnapshotRestartRearmsGuard(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	k := keys{prefix: "poll:"}
	ttl := time.Second
	acquire := func(value string) int64 {
		t.Helper()
		v, err := acquireScript.Run(ctx, c, []string{k.lease("x"), k.fence("x"), k.epoch("")}, value, ttl.Milliseconds(), time.Hour.Milliseconds()).Int64()
		require.NoError(t, err)
		return v
	}
	require.NoError(t, MarkEstablished(ctx, c, "poll:"))
	require.NoError(t, c.Save(ctx).Err()) // the snapshot holds the epoch, not the lease below
	before := acquire("a:1")
	require.Positive(t, before)

	require.NoError(t, srv.Reload()) // kill -9, restart in the same directory: loads the snapshot
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, settle, 10*time.Millisecond)
	require.EqualValues(t, 1, c.Exists(ctx, k.epoch("")).Val(), "the snapshot brought the epoch back")
	require.EqualValues(t, -1, acquire("b:1"), "granted at once after a restart from an older snapshot")
	require.Eventually(t, func() bool { return acquire("b:1") != -1 }, settle, 20*time.Millisecond)
	after := acquire("b:1")
	require.Greater(t, after, before)

	require.NoError(t, c.FlushAll(ctx).Err())
	require.EqualValues(t, -1, acquire("c:1"), "FLUSHALL re-arms the guard")
}

// Stop while Start is still connecting must not panic, and leaves nothing behind.
func TestStopDuringStart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	f := newFleet(t, srv.Addr(), testConfig())
	g := newGate(func(args []any) bool { return argsHave(args, "load") }) // the first call of Start
	g.honour = true
	g.armed.Store(true)
	m := f.buildAt("a", srv.Addr(), g)
	started := make(chan error, 1)
	go func() { started <- m.Start(context.Background()) }()
	select {
	case <-g.hit:
	case <-time.After(settle):
		t.Fatal("Start never subscribed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, m.Stop(ctx))
	select {
	case err := <-started:
		require.ErrorIs(t, err, ErrNotRunning)
	case <-time.After(settle):
		t.Fatal("Start did not return after Stop")
	}
	require.Zero(t, c.Exists(context.Background(), "poll:node:a").Val(), "heartbeat left behind")
	require.ErrorIs(t, m.Stop(ctx), ErrNotRunning)
}

// A heartbeat write in flight when Stop runs must not bring the heartbeat back after Stop deleted it.
func TestStopHeartbeatStaysDeleted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(context.Background(), c, "poll:"))
	cfg := testConfig()
	cfg.Targets = StaticTargets{"x"}
	f := newFleet(t, srv.Addr(), cfg)
	g := newGate(func(args []any) bool { return argsHave(args, "set") && argsHave(args, "poll:node:a") })
	m := f.startAt("a", srv.Addr(), g)
	g.armed.Store(true)
	select {
	case <-g.hit:
	case <-time.After(settle):
		t.Fatal("no heartbeat written")
	}
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped <- m.Stop(ctx)
	}()
	select { // let Stop get as far as it goes while the heartbeat is on the wire
	case <-stopped:
		stopped <- nil
	case <-time.After(time.Second):
	}
	close(g.go_)
	require.NoError(t, <-stopped)
	require.Zero(t, c.Exists(context.Background(), "poll:node:a").Val(), "heartbeat rewritten after Stop")
}

// The shutdown users write: a signal-cancelled context passed to Start, then Stop. The leases must be
// handed over at once, not left to expire.
func TestStopAfterStartContextCancelled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(context.Background(), c, "poll:"))
	cfg := testConfig()
	cfg.Targets = StaticTargets{"x", "y"}
	f := newFleet(t, srv.Addr(), cfg)
	m := f.build("a")
	sig, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Start(sig))
	require.Eventually(t, func() bool { return len(m.Held()) == 2 }, settle, 10*time.Millisecond)
	cancel() // SIGTERM
	ctx, c2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer c2()
	require.NoError(t, m.Stop(ctx))
	require.Empty(t, m.Held())
	for _, k := range []string{"poll:lease:x", "poll:lease:y", "poll:node:a"} {
		require.Zero(t, c.Exists(context.Background(), k).Val(), "%s deleted by Stop, not left to expire", k)
	}
	require.ErrorIs(t, m.Stop(ctx), ErrNotRunning)
}

// Stop whose context ends while a poll is still running cancels the poll and still releases.
func TestStopTimeoutCancelsPollsAndReleases(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(context.Background(), c, "poll:"))
	cfg := testConfig()
	cfg.Targets = StaticTargets{"x"}
	cfg.InstanceID = "a"
	cfg.Logger = quietLogger()
	polling := make(chan struct{}, 1)
	cfg.Poll = func(ctx context.Context, _ Poll) error {
		select {
		case polling <- struct{}{}:
		default:
		}
		<-ctx.Done() // a poll that only ends when told to
		return ctx.Err()
	}
	m, err := New(c, cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background()))
	select {
	case <-polling:
	case <-time.After(settle):
		t.Fatal("never polled")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.NoError(t, m.Stop(ctx))
	require.Zero(t, c.Exists(context.Background(), "poll:lease:x").Val(), "released after the poll was cancelled")
}
