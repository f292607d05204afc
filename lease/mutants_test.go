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
	require.Len(t, names, 6, "three scripts and three acquire variants")
	for _, s := range []*redis.Script{acquireNoGuard, acquireTokenReset, acquireNotIdempotent} {
		require.Equal(t, "acquire", names[s.Hash()])
	}
}

func TestMutantNamesAreChecked(t *testing.T) {
	require.PanicsWithValue(t, `lease: "election-no-cancel" is not a mutant of the lease manager (see mutation.Mutants)`,
		func() { WithMutants(DefaultConfig(), mutation.ElectionNoCancel) })
}
