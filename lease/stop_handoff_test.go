package lease

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// A graceful stop hands each endpoint over at its own limit: one with no poll in flight is taken over
// within a few round trips, while a sibling's long poll is still running; the sibling's endpoint is
// released only once that poll has ended, and taken over right after.
func TestStopHandsOverEachEndpointAtItsOwnPollEnd(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, newClient(t, srv.Addr()), "poll:"))
	eps := endpoints(4)
	cfg := testConfig()
	cfg.Targets = StaticTargets(eps)
	f := newFleet(t, srv.Addr(), cfg)
	const slowPoll = time.Second
	var slow atomic.Value // the endpoint a polls for slowPoll
	slow.Store("")
	slowStarted := make(chan struct{}, 1)
	f.pollDur = func(instance, ep string) time.Duration {
		switch {
		case instance != "a":
			return f.log.dur
		case ep == slow.Load().(string):
			select {
			case slowStarted <- struct{}{}:
			default:
			}
			return slowPoll
		default:
			return time.Millisecond // so that a's other endpoint is almost never mid-poll
		}
	}
	a := f.start("a")
	b := f.start("b")
	require.Eventually(t, func() bool { return f.settled(eps, 2, 2) }, settle, 10*time.Millisecond)
	held := a.Held()
	slowEp, idleEp := held[0], held[1]
	slow.Store(slowEp)
	select {
	case <-slowStarted:
	case <-time.After(settle):
		t.Fatal("a never polled", slowEp)
	}

	stopped := time.Now()
	stopErr := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		stopErr <- a.Stop(sctx)
	}()
	holds := func(ep string) func() bool { return func() bool { return slices.Contains(b.Held(), ep) } }
	// The bound is a quarter of the slow poll, which the old Stop waited for: a few round trips,
	// with room for a loaded machine.
	require.Eventually(t, holds(idleEp), slowPoll/4, time.Millisecond,
		"%s (no poll in flight) waited for %s's poll", idleEp, slowEp)
	idle := time.Since(stopped)
	require.False(t, slices.Contains(b.Held(), slowEp), "%s released while its poll was in flight", slowEp)
	require.Eventually(t, holds(slowEp), slowPoll+settle, time.Millisecond)
	require.NoError(t, <-stopErr)
	var aEnd, bStart time.Time
	require.Eventually(t, func() bool {
		for _, p := range f.log.pollsOf(slowEp) {
			if p.instance == "a" && p.end.After(aEnd) {
				aEnd = p.end
			}
			if p.instance == "b" && (bStart.IsZero() || p.start.Before(bStart)) {
				bStart = p.start
			}
		}
		return !bStart.IsZero()
	}, settle, time.Millisecond, "b polled %s", slowEp)
	t.Logf("after the stop: %s taken over in %s; %s's poll ended %s later, taken over %s after that",
		idleEp, idle.Round(100*time.Microsecond), slowEp, aEnd.Sub(stopped).Round(time.Millisecond),
		bStart.Sub(aEnd).Round(100*time.Microsecond))
	require.Empty(t, f.log.overlaps())
	require.Less(t, bStart.Sub(aEnd), slowPoll/4, "%s taken over long after its poll ended", slowEp)
}

// slowReleases holds every round trip that carries an announced release for d before sending it,
// once armed: a slow link, as the requests of a stopping instance see it.
type slowReleases struct {
	d     time.Duration
	armed atomic.Bool
}

func (s *slowReleases) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *slowReleases) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.hold([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (s *slowReleases) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		s.hold(cmds)
		return next(ctx, cmds)
	}
}

func (s *slowReleases) hold(cmds []redis.Cmder) {
	if !s.armed.Load() {
		return
	}
	for _, c := range cmds {
		for _, a := range c.Args() {
			if str, ok := a.(string); ok && strings.HasPrefix(str, "release ") {
				time.Sleep(s.d)
				return
			}
		}
	}
}

// On a slow link a release made ready while another of Stop's round trips is on the wire goes out at
// once, in a round trip of its own: its endpoint is taken over one link delay after its poll ended,
// not after the other round trip's remainder as well.
func TestStopReleaseDoesNotWaitForAnotherOnTheWire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, newClient(t, srv.Addr()), "poll:"))
	eps := endpoints(4)
	cfg := testConfig()
	// A call bound above the link delay below, and the timing that allows it.
	cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 9*time.Second, 3*time.Second, 2*time.Second
	cfg.Targets = StaticTargets(eps)
	f := newFleet(t, srv.Addr(), cfg)
	const hold, slowPoll = time.Second, 500 * time.Millisecond
	var slow atomic.Value
	slow.Store("")
	slowStarted := make(chan struct{}, 1)
	f.pollDur = func(instance, ep string) time.Duration {
		switch {
		case instance != "a":
			return f.log.dur
		case ep == slow.Load().(string):
			select {
			case slowStarted <- struct{}{}:
			default:
			}
			return slowPoll
		default:
			return time.Millisecond
		}
	}
	link := &slowReleases{d: hold}
	a := f.startAt("a", srv.Addr(), link)
	b := f.start("b")
	require.Eventually(t, func() bool { return f.settled(eps, 2, 2) }, settle, 10*time.Millisecond)
	held := a.Held()
	slowEp, idleEp := held[0], held[1]
	slow.Store(slowEp)
	select {
	case <-slowStarted:
	case <-time.After(settle):
		t.Fatal("a never polled", slowEp)
	}
	link.armed.Store(true)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, a.Stop(sctx))
	require.Eventually(t, func() bool { return slices.Contains(b.Held(), slowEp) && slices.Contains(b.Held(), idleEp) },
		settle, time.Millisecond)
	var aEnd, bStart time.Time
	require.Eventually(t, func() bool {
		for _, p := range f.log.pollsOf(slowEp) {
			if p.instance == "a" && p.end.After(aEnd) {
				aEnd = p.end
			}
			if p.instance == "b" && (bStart.IsZero() || p.start.Before(bStart)) {
				bStart = p.start
			}
		}
		return !bStart.IsZero()
	}, settle, time.Millisecond, "b polled %s", slowEp)
	took := bStart.Sub(aEnd)
	t.Logf("%s taken over %s after its poll ended (link delay %s)", slowEp, took.Round(time.Millisecond), hold)
	// Waiting for the idle endpoint's round trip would have added about hold-slowPoll (500 ms).
	require.Less(t, took, hold+(hold-slowPoll)/2, "%s's release waited for another round trip", slowEp)
	require.Empty(t, f.log.overlaps())
}
