//go:build tenure_mutants

package lease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// cmdLog is a go-redis hook that records the name (and script hash) of every command sent.
type cmdLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *cmdLog) note(c redis.Cmder) {
	args := c.Args()
	name := strings.ToLower(c.Name())
	if (name == "evalsha" || name == "del") && len(args) > 1 {
		name += ":" + fmt.Sprint(args[1])
	}
	l.mu.Lock()
	l.seen[name]++
	l.mu.Unlock()
}

func (l *cmdLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[name]
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { l.note(c); return next(ctx, c) }
}
func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		for _, c := range cs {
			l.note(c)
		}
		return next(ctx, cs)
	}
}

// Every lease mutant still runs (acquires, renews, polls, stops), and the ones that change what is
// sent to Redis send what they say.
func TestMutantsRun(t *testing.T) {
	type check func(t *testing.T, l *cmdLog, c *redis.Client, m *Manager)
	sends := func(name string) check {
		return func(t *testing.T, l *cmdLog, _ *redis.Client, _ *Manager) {
			require.Positive(t, l.count(name), "sends %s", name)
		}
	}
	cases := map[mutation.Name]check{
		mutation.NoDeadline: nil,
		mutation.RenewGetThenExpire: func(t *testing.T, l *cmdLog, c *redis.Client, m *Manager) {
			sends("get")(t, l, c, m)
			sends("pexpire")(t, l, c, m)
		},
		mutation.RenewUnconditional: sends("pexpire"),
		mutation.ReleaseUnchecked:   nil, // checked after Stop below
		mutation.NoGuard:            sends("evalsha:" + acquireNoGuard.Hash()),
		mutation.NotFailClosed:      nil,
		mutation.LostRenewalKept:    nil, // differs only once a renewal is refused (TestMutantLostRenewalKept)
		mutation.TokenReset:         sends("evalsha:" + acquireTokenReset.Hash()),
		mutation.DriftIgnored:       nil,
		mutation.DeadlineFromReply:  nil,
		mutation.NoLinkHealth:       nil,
		mutation.ReleaseBeforePoll:  nil,
		mutation.ProcessIdentity: func(t *testing.T, _ *cmdLog, c *redis.Client, m *Manager) {
			require.Equal(t, m.ID(), c.Get(context.Background(), "poll:lease:x").Val())
		},
		mutation.PlainRendezvous:      nil,
		mutation.AcquireNotIdempotent: sends("evalsha:" + acquireNotIdempotent.Hash()),
		mutation.TimeoutAsSuccess:     nil,
		mutation.GuardAnyRun:          sends("evalsha:" + acquireGuardAnyRun.Hash()),
		mutation.GuardHalfTTL:         sends("evalsha:" + acquireGuardHalfTTL.Hash()),
		// They differ only when the deadline passes with a poll in flight, or when the link fails
		// (TestMutantNoWatchdog, TestMutantProbeUnansweredHeals).
		mutation.NoWatchdog:           nil,
		mutation.ProbeUnansweredHeals: nil,
		// The lifecycle mutants differ only when Stop comes after Start's context ended, during Start,
		// or while a heartbeat is due (TestMutantsOfLifecycle, and the scenarios): a plain Stop releases.
		mutation.StopAfterCancelAbandons:  nil,
		mutation.StopHeartbeatRewrite:     nil,
		mutation.StopDuringStartUnguarded: nil,
	}
	for _, mu := range mutation.Mutants {
		if _, ok := cases[mu.Name]; mu.Of == mutation.Lease && !ok {
			t.Errorf("lease mutant %s has no case here", mu.Name)
		}
	}
	for n, chk := range cases {
		t.Run(string(n), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := newClient(t, srv.Addr())
			ctx := context.Background()
			if n != mutation.NoGuard {
				require.NoError(t, MarkEstablished(ctx, c, "poll:"))
			}
			cfg := testConfig()
			cfg.Targets = StaticTargets{"x", "y"}
			cfg = WithMutants(cfg, n)
			f := newFleet(t, srv.Addr(), cfg)
			l := &cmdLog{seen: map[string]int{}}
			m := f.startAt("a", srv.Addr(), l)
			require.Eventually(t, func() bool { return len(m.Held()) == 2 && len(f.log.renewalsFor("x")) > 0 }, settle, 10*time.Millisecond)
			if chk != nil {
				chk(t, l, c, m)
			}
			if n == mutation.NoDeadline {
				for _, e := range f.log.eventsFor("x") {
					require.True(t, e.Until.IsZero(), "no deadline is reported: %+v", e)
				}
			} else {
				require.False(t, f.log.eventsFor("x")[0].Until.IsZero())
			}
			f.stop("a")
			require.Zero(t, c.Exists(ctx, "poll:lease:x", "poll:lease:y").Val(), "released")
			if n == mutation.ReleaseUnchecked {
				require.Positive(t, l.count("del:poll:lease:x"), "released by a plain DEL")
			}
		})
	}
}

func TestMutantPlainRendezvousIgnoresLoad(t *testing.T) {
	insts := []string{"a", "b", "c"}
	eps := endpoints(60)
	plain := assignPlain(insts, eps)
	require.Len(t, plain, len(eps))
	for _, ep := range eps {
		best, bestScore := "", uint64(0)
		for _, id := range insts {
			if s := mix64(hash64(ep) ^ mix64(hash64(id))); best == "" || s > bestScore {
				best, bestScore = id, s
			}
		}
		require.Equal(t, best, plain[ep], "highest weight wins, whatever the load")
	}
}

// The lifecycle mutants bring back what Stop did before its transitions were guarded: after Start's
// context was cancelled it releases nothing, and during Start it panics.
func TestMutantsOfLifecycle(t *testing.T) {
	t.Run(string(mutation.StopAfterCancelAbandons), func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		c := newClient(t, srv.Addr())
		require.NoError(t, MarkEstablished(context.Background(), c, "poll:"))
		cfg := testConfig()
		cfg.Targets = StaticTargets{"x", "y"}
		cfg = WithMutants(cfg, mutation.StopAfterCancelAbandons)
		m := newFleet(t, srv.Addr(), cfg).build("a")
		sig, cancel := context.WithCancel(context.Background())
		require.NoError(t, m.Start(sig))
		require.Eventually(t, func() bool { return len(m.Held()) == 2 }, settle, 10*time.Millisecond)
		cancel()
		// The end of the start context reaches the manager through context.AfterFunc: Stop comes
		// after the crash once the manager holds nothing (else Stop would run before it, and release).
		require.Eventually(t, func() bool { return len(m.Held()) == 0 }, settle, time.Millisecond)
		require.ErrorIs(t, m.Stop(context.Background()), ErrNotRunning)
		require.EqualValues(t, 2, c.Exists(context.Background(), "poll:lease:x", "poll:lease:y").Val(), "left to expire")
	})
	t.Run(string(mutation.StopDuringStartUnguarded), func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		cfg := testConfig()
		cfg = WithMutants(cfg, mutation.StopDuringStartUnguarded)
		g := newGate(func(args []any) bool { return argsHave(args, "load") }) // the first call of Start
		g.honour = true
		g.armed.Store(true)
		m := newFleet(t, srv.Addr(), cfg).buildAt("a", srv.Addr(), g)
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan error, 1)
		go func() { started <- m.Start(ctx) }()
		select {
		case <-g.hit:
		case <-time.After(settle):
			t.Fatal("Start never sent its first call")
		}
		require.Panics(t, func() { _ = m.Stop(context.Background()) })
		cancel() // what ends Start now is its own context
		select {
		case err := <-started:
			require.Error(t, err)
		case <-time.After(settle):
			t.Fatal("Start did not return after its context ended")
		}
	})
}

// The deadline mutants each drop one term of the deadline: the drift bound, or the send time.
func TestMutantDeadlineArithmetic(t *testing.T) {
	cfg := validConfig()
	cfg.LeaseTTL, cfg.DriftBound, cfg.SafetyMargin = 30*time.Second, 0.1, time.Second
	t0 := time.Unix(1000, 0)
	sc := &scriptCall{sent: t0, replied: t0.Add(2 * time.Second)}
	deadline := func(muts ...mutation.Name) time.Time {
		m, err := New(newClient(t, "127.0.0.1:1"), WithMutants(cfg, muts...))
		require.NoError(t, err)
		d, ok := m.confirm(time.Time{}, sc)
		require.True(t, ok)
		return d
	}
	require.Equal(t, t0.Add(26*time.Second), deadline(), "sent + TTL*(1-drift) - margin")
	require.Equal(t, t0.Add(29*time.Second), deadline(mutation.DriftIgnored))
	require.Equal(t, t0.Add(28*time.Second), deadline(mutation.DeadlineFromReply))
}

// The acquire variants are listed with the reference's scripts, as acquires, so that the commands of a
// mutant are classified like the reference's.
func TestMutantScriptsListed(t *testing.T) {
	names := ScriptNames()
	require.Len(t, names, 8, "three scripts and five acquire variants")
	for _, s := range []*redis.Script{acquireNoGuard, acquireTokenReset, acquireNotIdempotent, acquireGuardAnyRun, acquireGuardHalfTTL} {
		require.Equal(t, "acquire", names[s.Hash()])
	}
}

func TestMutantNamesAreChecked(t *testing.T) {
	require.PanicsWithValue(t, `lease: "election-no-cancel" is not a mutant of the lease manager (see mutation.Mutants)`,
		func() { WithMutants(DefaultConfig(), mutation.ElectionNoCancel) })
}

// cmdGate is a go-redis hook that, when set, holds every command (hang: neither sent nor failed, whatever
// its context) or fails it at once as a lost connection would (fail).
type cmdGate struct {
	mu   sync.Mutex
	mode string // "", "hang" or "fail"
}

func (g *cmdGate) set(mode string) { g.mu.Lock(); g.mode = mode; g.mu.Unlock() }

func (g *cmdGate) pass() error {
	for {
		g.mu.Lock()
		mode := g.mode
		g.mu.Unlock()
		switch mode {
		case "fail":
			return fmt.Errorf("gate: %w", context.DeadlineExceeded)
		case "hang":
			time.Sleep(5 * time.Millisecond) // a stuck socket: wait for the cmdGate, not for the caller
			continue
		}
		return nil
	}
}

func (g *cmdGate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *cmdGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if err := g.pass(); err != nil {
			c.SetErr(err)
			return err
		}
		return next(ctx, c)
	}
}
func (g *cmdGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		if err := g.pass(); err != nil {
			for _, c := range cs {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cs)
	}
}

// A guard that ignores the server's run takes an epoch key written by another run of the server (a
// snapshot restored) as this dataset's and grants at once; one of half a TTL ends half a TTL after it
// is armed. The reference re-arms the guard for a full TTL in both cases.
func TestMutantGuardVariants(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	keys := []string{"poll:lease:x", "poll:fence:x", "poll:epoch"}
	const ttlMs = 10000
	restored := func() {
		require.NoError(t, c.FlushAll(ctx).Err())
		// An epoch whose grace ended long ago, written by another server run.
		require.NoError(t, c.Set(ctx, "poll:epoch", "1000 0123456789abcdef", 0).Err())
	}
	restored()
	n, err := acquireScript.Run(ctx, c, keys, "a:1", ttlMs).Int64()
	require.NoError(t, err)
	require.EqualValues(t, -1, n, "the reference re-arms the guard for another run's epoch")
	restored()
	n, err = acquireGuardAnyRun.Run(ctx, c, keys, "a:1", ttlMs).Int64()
	require.NoError(t, err)
	require.Positive(t, n, "guard-any-run grants on another run's epoch")

	guardLeft := func(s *redis.Script) time.Duration {
		require.NoError(t, c.FlushAll(ctx).Err())
		n, err := s.Run(ctx, c, keys, "a:1", ttlMs).Int64()
		require.NoError(t, err)
		require.EqualValues(t, -1, n, "a fresh dataset arms the guard")
		end, _, _ := strings.Cut(c.Get(ctx, "poll:epoch").Val(), " ")
		var us int64
		_, err = fmt.Sscan(end, &us)
		require.NoError(t, err)
		now, err := c.Time(ctx).Result()
		require.NoError(t, err)
		return time.UnixMicro(us).Sub(now)
	}
	require.InDelta(t, float64(10*time.Second), float64(guardLeft(acquireScript)), float64(time.Second))
	require.InDelta(t, float64(5*time.Second), float64(guardLeft(acquireGuardHalfTTL)), float64(time.Second))
}

// The reference's watchdog cancels the poll in flight at the local deadline; without it a poll that
// began before the deadline runs on (here until the test ends it) while renewals hang.
func TestMutantNoWatchdog(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		t.Run(fmt.Sprint("mutant=", mutant), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := newClient(t, srv.Addr())
			ctx := context.Background()
			require.NoError(t, MarkEstablished(ctx, c, "poll:"))
			g := &cmdGate{}
			client := newClient(t, srv.Addr())
			client.AddHook(g)
			cfg := testConfig()
			cfg.Targets = StaticTargets{"x"}
			cfg.Logger = quietLogger()
			if mutant {
				cfg = WithMutants(cfg, mutation.NoWatchdog)
			}
			var mu sync.Mutex
			var deadline, cancelled time.Time
			release := make(chan struct{})
			cfg.Poll = func(pctx context.Context, p Poll) error {
				mu.Lock()
				deadline = p.Deadline
				mu.Unlock()
				select {
				case <-pctx.Done():
					mu.Lock()
					cancelled = time.Now()
					mu.Unlock()
				case <-release:
				}
				return nil
			}
			m, err := New(client, cfg)
			require.NoError(t, err)
			require.NoError(t, m.Start(ctx))
			t.Cleanup(func() { _ = m.Stop(context.Background()) })
			t.Cleanup(func() { g.set("") })
			t.Cleanup(func() { close(release) })
			require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return !deadline.IsZero() }, settle, 10*time.Millisecond)
			g.set("hang") // renewals neither answer nor fail: only the local deadline ends the belief
			require.Eventually(t, func() bool { return len(m.Held()) == 0 }, 2*cfg.LeaseTTL, 10*time.Millisecond,
				"the belief ends at the deadline")
			// Held reads the deadline itself, so the belief ends there a moment before the watchdog's
			// timer fires and cancels the poll: wait for the cancellation, do not read it at once. The
			// mutant's poll is not cancelled until the test ends; it is watched for half a second past
			// the deadline, by which the reference's timer has fired in every run we have seen.
			wasCancelled := func() bool { mu.Lock(); defer mu.Unlock(); return !cancelled.IsZero() }
			if mutant {
				require.Never(t, wasCancelled, 500*time.Millisecond, 10*time.Millisecond,
					"without a watchdog the poll in flight is not cancelled")
				return
			}
			require.Eventually(t, wasCancelled, cfg.LeaseTTL, 5*time.Millisecond, "the watchdog cancels the poll in flight")
		})
	}
}

// While replies are lost the reference sends nothing but its probes until one is answered; the mutant
// takes an unanswered probe for an answer and writes its heartbeat blind at every probe.
func TestMutantProbeUnansweredHeals(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		t.Run(fmt.Sprint("mutant=", mutant), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := newClient(t, srv.Addr())
			ctx := context.Background()
			require.NoError(t, MarkEstablished(ctx, c, "poll:"))
			cfg := testConfig()
			cfg.Targets = StaticTargets{"x"}
			if mutant {
				cfg = WithMutants(cfg, mutation.ProbeUnansweredHeals)
			}
			f := newFleet(t, srv.Addr(), cfg)
			g := &cmdGate{}
			l := &cmdLog{seen: map[string]int{}}
			m := f.startAt("a", srv.Addr(), l, g)
			t.Cleanup(func() { g.set("") })
			require.Eventually(t, func() bool { return len(m.Held()) == 1 }, settle, 10*time.Millisecond)
			g.set("fail")
			require.Eventually(t, func() bool { return !m.linkHealthy() }, settle, 10*time.Millisecond)
			l.mu.Lock()
			l.seen = map[string]int{}
			l.mu.Unlock()
			require.Eventually(t, func() bool { return l.count("ping") >= 3 }, settle, 10*time.Millisecond, "probes every RenewInterval/2")
			if mutant {
				require.Positive(t, l.count("set")+l.count("zadd"), "heartbeats written although no probe was answered")
				return
			}
			require.Zero(t, l.count("set")+l.count("zadd"), "no heartbeat until a probe is answered")
		})
	}
}

// renewReplies is a go-redis hook that counts the renewals of one key answered "not held" (0).
type renewReplies struct {
	key string
	mu  sync.Mutex
	n   int
}

func (r *renewReplies) refused() int { r.mu.Lock(); defer r.mu.Unlock(); return r.n }

func (r *renewReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *renewReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { err := next(ctx, c); r.note(c); return err }
}
func (r *renewReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		err := next(ctx, cs)
		for _, c := range cs {
			r.note(c)
		}
		return err
	}
}

func (r *renewReplies) note(c redis.Cmder) {
	args := c.Args()
	if len(args) < 4 || fmt.Sprint(args[1]) != renewScript.Hash() || fmt.Sprint(args[3]) != r.key {
		return
	}
	if cmd, ok := c.(*redis.Cmd); ok {
		if v, err := cmd.Int64(); err == nil && v == 0 {
			r.mu.Lock()
			r.n++
			r.mu.Unlock()
		}
	}
}

// A holder's key deleted under it (as a restart without persistence deletes it): the reference's next
// renewal is answered "not held" and ends the belief there (lost); the mutant's belief survives that
// answer and ends only at its local deadline (expired), with no value of its own in the key meanwhile.
// The scenario that catches it in a run is redis-restart-empty (the checker's stale-belief).
func TestMutantLostRenewalKept(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		t.Run(fmt.Sprint("mutant=", mutant), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			c := newClient(t, srv.Addr())
			ctx := context.Background()
			require.NoError(t, MarkEstablished(ctx, c, "poll:"))
			cfg := testConfig()
			cfg.Targets = StaticTargets{"x"}
			if mutant {
				cfg = WithMutants(cfg, mutation.LostRenewalKept)
			}
			f := newFleet(t, srv.Addr(), cfg)
			replies := &renewReplies{key: "poll:lease:x"}
			m := f.startAt("a", srv.Addr(), replies)
			require.Eventually(t, func() bool { return len(m.Held()) == 1 && len(f.log.renewalsFor("x")) > 0 }, settle, 10*time.Millisecond)
			before := len(f.log.eventsFor("x"))
			require.Equal(t, int64(1), c.Del(ctx, "poll:lease:x").Val())
			// The first change of belief after the deletion is the end of the holding.
			require.Eventually(t, func() bool { return len(f.log.eventsFor("x")) > before }, 2*cfg.LeaseTTL, 10*time.Millisecond)
			end := f.log.eventsFor("x")[before]
			require.Positive(t, replies.refused(), "a renewal was answered \"not held\" before the belief ended")
			if mutant {
				require.Equal(t, EventExpired, end.Kind, "the mutant's belief ends at its deadline: %+v", end)
				return
			}
			require.Equal(t, EventLost, end.Kind, "the reference's belief ends at the refused renewal: %+v", end)
			require.Equal(t, ReasonLost, end.Reason)
		})
	}
}
