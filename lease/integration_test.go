package lease

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// Integration tests: a private redis-server per test, at a tenth of the specification's timing
// (lease TTL 3s, renewal 1s). Bounds below are generous for a loaded two-core machine; speed is
// measured by the benchmarks, not asserted here.

const settle = 20 * time.Second // upper bound for convergence waits

func realFleet(t *testing.T, nSessions int) (*fleet, *redisserver.Server, []string) {
	t.Helper()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(context.Background(), c, "poll:"))
	eps := endpoints(nSessions)
	addSessions(t, c, eps)
	f := newFleet(t, srv.Addr(), testConfig())
	t.Cleanup(func() {
		if o := f.log.overlaps(); len(o) > 0 {
			t.Errorf("overlapping polls by different instances:\n%v", o)
		}
	})
	return f, srv, eps
}

func TestOneInstanceAcquiresAll(t *testing.T) {
	t.Parallel()
	f, _, eps := realFleet(t, 6)
	m := f.start("solo")
	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		for _, ep := range eps {
			if len(f.log.pollsOf(ep)) < 2 {
				return false
			}
		}
		return true
	}, settle, 20*time.Millisecond, "every held endpoint is polled")
}

func TestBalanceThreeByNineExact(t *testing.T) {
	t.Parallel()
	f, _, eps := realFleet(t, 9)
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
}

func TestRebalanceTwoToThree(t *testing.T) {
	t.Parallel()
	f, _, eps := realFleet(t, 10)
	f.start("a")
	f.start("b")
	require.Eventually(t, func() bool { return f.settled(eps, 5, 5) }, settle, 20*time.Millisecond)
	c := f.start("c")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 4) }, settle, 20*time.Millisecond)
	require.Contains(t, []int{3, 4}, len(c.Held()))
}

func TestGracefulThreeToTwoWithinTTL(t *testing.T) {
	t.Parallel()
	f, _, eps := realFleet(t, 9)
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	f.stop("c")
	stopped := time.Now()
	require.Eventually(t, func() bool { return f.settled(eps, 4, 5) }, settle, 5*time.Millisecond)
	took := time.Since(stopped)
	t.Logf("takeover after graceful stop: %s", took)
	require.Less(t, took, testConfig().LeaseTTL, "released leases are taken over on notification, not on expiry")
}

func TestCrashTakeover(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 9)
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	cm := f.members["c"].m
	victim := cm.Held()
	f.crash("c")
	// The end of the start context reaches the manager asynchronously (context.AfterFunc): the crash
	// has taken effect once it holds nothing; a poll loop past its check then calls Poll with a
	// context already done, which reaches no endpoint (pollFor).
	require.Eventually(t, func() bool { return len(cm.Held()) == 0 }, settle, time.Millisecond)
	crashed := time.Now()
	// A crash releases nothing: the victim's keys still name it.
	c := newClient(t, srv.Addr())
	for _, ep := range victim {
		require.True(t, strings.HasPrefix(c.Get(context.Background(), "poll:lease:"+ep).Val(), "c:"), "%s names a holding of c", ep)
	}
	require.Eventually(t, func() bool { return f.settled(eps, 4, 5) }, settle, 20*time.Millisecond)
	t.Logf("takeover after crash: %s", time.Since(crashed))
	for _, ep := range victim {
		for _, p := range f.log.pollsOf(ep) {
			if p.instance == "c" {
				require.False(t, p.start.After(crashed), "the crashed instance polled after its crash")
			}
		}
	}
	for _, e := range f.log.eventsFor("") {
		if e.Instance == "c" && e.Kind != EventAcquired {
			t.Fatalf("a crashed instance reports nothing, got %+v", e)
		}
	}
}

func TestRestartWithNewID(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 4)
	f.start("old-1")
	require.Eventually(t, func() bool { return f.settled(eps, 4, 4) }, settle, 20*time.Millisecond)
	oldTokens := map[string]uint64{}
	for _, e := range f.log.eventsFor("") {
		oldTokens[e.Endpoint] = e.Token
	}
	f.crash("old-1")
	m := f.start("new-2")
	// The new identity cannot renew its predecessor's leases.
	e := &scriptEnv{t: t, c: newClient(t, srv.Addr()), k: keys{prefix: "poll:"}}
	require.EqualValues(t, 0, e.renew("new-2", eps[0], time.Second))
	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 20*time.Millisecond)
	for _, ev := range f.log.eventsFor("") {
		if ev.Instance == "new-2" && ev.Kind == EventAcquired {
			require.Greater(t, ev.Token, oldTokens[ev.Endpoint], "re-acquired legitimately, with a new token")
		}
	}
}

func TestFiveByTenStartedAtOnce(t *testing.T) {
	t.Parallel()
	f, _, eps := realFleet(t, 10)
	ids := []string{"i0", "i1", "i2", "i3", "i4"}
	ms := make([]*Manager, len(ids))
	for i, id := range ids {
		ms[i] = f.build(id)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errs := make(chan error, len(ms))
	for _, m := range ms {
		go func() { errs <- m.Start(ctx) }()
	}
	for range ms {
		require.NoError(t, <-errs)
	}
	for i, m := range ms {
		f.mu.Lock()
		f.members[ids[i]] = &member{m, cancel}
		f.mu.Unlock()
		t.Cleanup(func() {
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = m.Stop(sctx)
		})
	}
	require.Eventually(t, func() bool { return f.settled(eps, 2, 2) }, settle, 20*time.Millisecond)
	// Keep polling for a couple of renewal intervals so overlaps, if any, would show.
	f.log.mu.Lock()
	n := len(f.log.polls)
	f.log.mu.Unlock()
	require.Eventually(t, func() bool {
		f.log.mu.Lock()
		defer f.log.mu.Unlock()
		return len(f.log.polls) > n+200
	}, settle, 20*time.Millisecond)
	require.Empty(t, f.log.overlaps())
}

func TestPausedAndRemovedSessionsStopBeingPolled(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 4)
	m := f.start("a")
	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 20*time.Millisecond)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "session:"+eps[0], `{"id":"`+eps[0]+`","paused":true}`, 0).Err())
	require.NoError(t, c.Del(ctx, "session:"+eps[1]).Err())
	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps[2:]) }, settle, 20*time.Millisecond)
	for _, ep := range eps[:2] {
		evs := f.log.eventsFor(ep)
		last := evs[len(evs)-1]
		require.Equal(t, EventReleased, last.Kind)
		require.Equal(t, ReasonTargetRemoved, last.Reason)
		for _, p := range f.log.pollsOf(ep) {
			require.False(t, p.start.After(last.At), "%s polled after its release", ep)
		}
		// The belief ends before the release is sent: wait for the release to land.
		require.Eventually(t, func() bool { return c.Exists(ctx, "poll:lease:"+ep).Val() == 0 }, settle, 10*time.Millisecond, "lease %s released", ep)
	}
	// Resuming the paused session makes it a target again.
	require.NoError(t, c.Set(ctx, "session:"+eps[0], `{"id":"`+eps[0]+`","paused":false}`, 0).Err())
	require.Eventually(t, func() bool { return slices.Contains(m.Held(), eps[0]) }, settle, 20*time.Millisecond)
}

func TestRenewalFailurePausesPolling(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 3)
	m := f.start("a")
	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 20*time.Millisecond)
	require.NoError(t, srv.Pause())
	paused := time.Now()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = srv.Resume()
		}
	})
	cfg := testConfig()
	require.Eventually(t, func() bool { return len(m.Held()) == 0 }, cfg.RenewInterval+cfg.OpTimeout+5*time.Second, 10*time.Millisecond)
	t.Logf("polling stopped %s after Redis froze", time.Since(paused))
	for _, ep := range eps {
		evs := f.log.eventsFor(ep)
		last := evs[len(evs)-1]
		require.Equal(t, EventLost, last.Kind, "%+v", last)
		require.Equal(t, ReasonRenewFailed, last.Reason)
		for _, p := range f.log.pollsOf(ep) {
			require.False(t, p.start.After(last.At), "%s polled after its renewal failed", ep)
		}
	}
	require.NoError(t, srv.Resume())
	resumed = true
	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 20*time.Millisecond, "polling resumes")
}
