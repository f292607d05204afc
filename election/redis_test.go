package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fleet is a set of electors contending for one role, each with its own Start context so the test can
// crash one.
type fleet struct {
	es      []*Elector
	cancels []context.CancelFunc
	rec     *record
	started chan uint64 // terms, as leaders start acting
}

func newFleet(t *testing.T, n int, backend func(i int) Backend, cfgFor func(i int) Config) *fleet {
	t.Helper()
	f := &fleet{rec: newRecord(), started: make(chan uint64, 64)}
	for i := range n {
		cfg := cfgFor(i)
		cfg.OnStartedLeading = f.rec.onStarted(cfg.InstanceID, f.started)
		e, err := New(backend(i), cfg)
		require.NoError(t, err)
		f.rec.watch(e)
		f.es = append(f.es, e)
	}
	t.Cleanup(func() {
		for _, c := range f.cancels {
			c()
		}
	})
	return f
}

func (f *fleet) start(t *testing.T) {
	t.Helper()
	for _, e := range f.es {
		ctx, cancel := context.WithCancel(context.Background())
		f.cancels = append(f.cancels, cancel)
		require.NoError(t, e.Start(ctx))
	}
}

// leader waits for exactly one elector to lead and returns its index.
func (f *fleet) leader(t *testing.T, within time.Duration) int {
	t.Helper()
	require.Eventually(t, func() bool { return len(leaders(f.es)) == 1 }, within, 5*time.Millisecond, "no single leader")
	l := leaders(f.es)[0]
	for i, e := range f.es {
		if e == l {
			return i
		}
	}
	panic("unreachable")
}

// nextStart waits for a leader to start acting and returns its term and when.
func (f *fleet) nextStart(t *testing.T, within time.Duration) (uint64, time.Time) {
	t.Helper()
	select {
	case term := <-f.started:
		return term, time.Now()
	case <-time.After(within):
		t.Fatalf("no leader started acting within %s", within)
		return 0, time.Time{}
	}
}

func (f *fleet) drainStarted() {
	for {
		select {
		case <-f.started:
		default:
			return
		}
	}
}

// finish stops everyone and checks the record.
func (f *fleet) finish(t *testing.T) {
	t.Helper()
	stopAll(t, f.es)
	f.rec.check(t)
}

func redisFleet(t *testing.T, env *redisEnv, n int, tweak func(*Config)) *fleet {
	role := uniqueRole(t)
	return newFleet(t, n,
		func(int) Backend { return NewRedisBackend(env.c, RedisOptions{}) },
		func(i int) Config {
			cfg := testConfig(t, role, fmt.Sprintf("n%d", i), uint64(i+1))
			if tweak != nil {
				tweak(&cfg)
			}
			return cfg
		})
}

func TestRedisSingleLeaderAmongFiveStartedAtOnce(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 5, nil)
	f.start(t)
	l := f.leader(t, testTTL+3*time.Second)
	leader := f.es[l]
	require.Eventually(t, func() bool {
		for _, e := range f.es {
			if e.Leader() != leader.ID() {
				return false
			}
		}
		return true
	}, 3*testRetry, 5*time.Millisecond, "every elector observes the leader")
	for _, e := range f.es {
		if e != leader {
			require.Equal(t, Follower, e.State())
		}
	}
	require.Never(t, func() bool { return len(leaders(f.es)) != 1 || !leader.IsLeader() }, 2*testTTL, 10*time.Millisecond,
		"a healthy leader keeps the role through renewals, alone")
	f.finish(t)
}

func TestRedisCrashFailsOverWithinTTL(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 3, nil)
	f.start(t)
	l := f.leader(t, testTTL+3*time.Second)
	first, _ := f.nextStart(t, time.Second)
	crashed := time.Now()
	f.cancels[l]() // crash: releases nothing
	term, at := f.nextStart(t, testTTL+testRetry+2*time.Second)
	failover := at.Sub(crashed)
	t.Logf("failover after crash: %s", failover)
	require.Greater(t, term, first)
	require.Less(t, failover, testTTL+testRetry+time.Second, "failover within TTL + RetryInterval + 1s tolerance")
	require.NotEqual(t, f.es[l].ID(), leaders(f.es)[0].ID())
	f.finish(t)
}

func TestRedisGracefulHandoffIsFast(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	// With RetryInterval = TTL, only the release notification can make the standby quick.
	f := redisFleet(t, env, 2, func(c *Config) { c.RetryInterval = testTTL })
	f.start(t)
	l := f.leader(t, 2*testTTL+3*time.Second)
	first, _ := f.nextStart(t, time.Second)
	require.Eventually(t, func() bool { return f.es[1-l].Leader() == f.es[l].ID() }, 2*testTTL, 5*time.Millisecond)
	stopped := time.Now()
	require.NoError(t, f.es[l].Stop(context.Background()))
	term, at := f.nextStart(t, 2*testTTL)
	handoff := at.Sub(stopped)
	t.Logf("graceful handoff: %s", handoff)
	require.Greater(t, term, first)
	require.Less(t, handoff, testTTL/4, "the standby leads well within one RetryInterval")
	f.finish(t)
}

func TestRedisRenewalFailureEndsLeadershipBeforeDeadline(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	var mu sync.Mutex
	var until time.Time // the last local deadline the elector reported
	f := redisFleet(t, env, 1, func(c *Config) {
		c.OnValidUntil = func(_ uint64, u time.Time) {
			mu.Lock()
			until = u
			mu.Unlock()
		}
	})
	f.start(t)
	f.leader(t, 10*time.Second)
	first, _ := f.nextStart(t, 5*time.Second)
	e := f.es[0]

	require.NoError(t, env.srv.Pause())
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = env.srv.Resume()
		}
	})
	pausedAt := time.Now()
	// Wait for the leader work to end (a condition, with a bound generous for a loaded machine); the
	// timing assertions below are on what the elector computed, not on how fast this test was scheduled.
	var acting []span
	require.Eventually(t, func() bool {
		f.rec.mu.Lock()
		defer f.rec.mu.Unlock()
		acting = append(acting[:0], f.rec.acting...)
		return len(acting) == 1
	}, e.cfg.validity()+10*time.Second, 5*time.Millisecond, "leader work never stopped")
	ended := acting[0].end
	mu.Lock()
	last := until
	mu.Unlock()
	require.False(t, e.IsLeader())
	// The last confirmed renewal was sent before the pause, so its deadline is at most pausedAt + validity.
	require.False(t, last.After(pausedAt.Add(e.cfg.validity())), "deadline counted from the send time: %s after the pause", last.Sub(pausedAt))
	// Fail closed: the failed renewal ends the leadership well before that deadline; the tolerance is
	// only for the scheduling of the leader work's goroutine.
	t.Logf("leader work stopped %s after the pause, %s before its deadline", ended.Sub(pausedAt), last.Sub(ended))
	require.Less(t, ended.Sub(last), 250*time.Millisecond, "the leader acted past its local deadline")

	require.NoError(t, env.srv.Resume())
	paused = false
	term, _ := f.nextStart(t, 10*time.Second)
	require.Greater(t, term, first, "a new leadership, a new term")
	f.finish(t)
}

func TestRedisRestartWithEmptyDatasetKeepsOneLeaderAndRaisesTerms(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 3, nil)
	f.start(t)
	f.leader(t, testTTL+3*time.Second)
	first, _ := f.nextStart(t, time.Second)
	require.NoError(t, env.srv.Restart())
	restarted := time.Now()
	term, at := f.nextStart(t, 2*testTTL+3*time.Second)
	t.Logf("leader again %s after the restart", at.Sub(restarted))
	require.Greater(t, term, first)
	f.leader(t, time.Second)
	f.finish(t) // checks that nobody acted or believed alongside the old leader
}

// The snapshot a restart loads predates the leadership: it holds the epoch key but not the leader key.
// The standbys must not lead while the old leader may still believe.
func TestRedisRestartFromOlderSnapshotKeepsOneLeader(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 3, nil)
	ctx := context.Background()
	f.start(t)
	epoch := NewRedisBackend(env.c, RedisOptions{}).key(f.es[0].Role(), "epoch")
	require.Eventually(t, func() bool { return env.c.Exists(ctx, epoch).Val() == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, env.c.Save(ctx).Err())
	f.leader(t, 10*time.Second)
	first, _ := f.nextStart(t, 5*time.Second)
	require.NoError(t, env.srv.Reload()) // loads the snapshot saved above
	term, _ := f.nextStart(t, 10*time.Second)
	require.Greater(t, term, first)
	f.finish(t) // no two leaders acting or believing at once
}

func TestRedisTermsStrictlyIncreaseOverHandoffs(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 4, nil)
	f.start(t)
	var last uint64
	for range 3 {
		l := f.leader(t, testTTL+3*time.Second)
		term, _ := f.nextStart(t, time.Second)
		require.Greater(t, term, last)
		require.Equal(t, term, f.es[l].Term())
		last = term
		require.NoError(t, f.es[l].Stop(context.Background()))
	}
	f.finish(t)
}

func TestRunOnceRunsOnlyWhenLeadershipIsFree(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	b := NewRedisBackend(env.c, RedisOptions{})
	role := uniqueRole(t)
	cfg := testConfig(t, role, "once", 1)
	ctx := context.Background()

	var got uint64
	fn := func(ctx context.Context, term uint64) error {
		require.NoError(t, ctx.Err())
		got = term
		return nil
	}
	// The first election of a new role waits out the fresh-dataset grace.
	require.Eventually(t, func() bool {
		ran, err := RunOnce(ctx, b, cfg, fn)
		require.NoError(t, err)
		return ran
	}, testTTL+2*time.Second, 50*time.Millisecond)
	require.NotZero(t, got)
	info, err := b.Leader(ctx, role)
	require.NoError(t, err)
	require.Empty(t, info.ID, "released afterwards")

	boom := errors.New("boom")
	ran, err := RunOnce(ctx, b, cfg, func(context.Context, uint64) error { return boom })
	require.True(t, ran)
	require.ErrorIs(t, err, boom)

	// While someone else leads, nothing runs.
	other := testConfig(t, role, "other", 2)
	e, err := New(b, other)
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	require.Eventually(t, e.IsLeader, 2*time.Second, 5*time.Millisecond)
	ran, err = RunOnce(ctx, b, cfg, func(context.Context, uint64) error { t.Error("ran while another leads"); return nil })
	require.NoError(t, err)
	require.False(t, ran)
	require.NoError(t, e.Stop(ctx))

	// Leadership lost while the function runs: its context ends before the deadline and RunOnce says so.
	ran, err = RunOnce(ctx, b, cfg, func(ctx context.Context, term uint64) error {
		require.NoError(t, env.srv.Pause())
		defer func() { require.NoError(t, env.srv.Resume()) }()
		<-ctx.Done()
		return context.Cause(ctx)
	})
	require.True(t, ran)
	require.ErrorIs(t, err, ErrLeadershipLost)
}

func TestLeaderOnlyRunsWhileLeadingAndStopWaitsForIt(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 2, nil)
	calls := make([]func(context.Context) error, 2)
	inFlight := make(chan struct{})
	var finished time.Time
	for i, e := range f.es {
		calls[i] = LeaderOnly(e, func(ctx context.Context, term uint64) error {
			require.Equal(t, e.Term(), term)
			close(inFlight)
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // cleanup that the handoff must wait for
			finished = time.Now()
			return nil
		})
	}
	err := calls[0](context.Background())
	require.ErrorIs(t, err, ErrNotLeader)
	require.Contains(t, err.Error(), `instance "n0"`)

	f.start(t)
	l := f.leader(t, testTTL+3*time.Second)
	f.nextStart(t, time.Second)
	require.ErrorIs(t, calls[1-l](context.Background()), ErrNotLeader)
	done := make(chan error, 1)
	go func() { done <- calls[l](context.Background()) }()
	<-inFlight
	require.NoError(t, f.es[l].Stop(context.Background()))
	require.NoError(t, <-done)
	_, at := f.nextStart(t, testTTL)
	require.True(t, at.After(finished), "the standby starts only after in-flight work finished")
	f.finish(t)
}
