package election

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/promtest"
)

func TestRedisLinkFailureClassification(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	reply := env.c.Do(context.Background(), "NOSUCHCOMMAND").Err()
	require.Error(t, reply)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"redis.Nil", redis.Nil, false},
		{"error reply", reply, false},
		{"wrapped error reply", fmt.Errorf("renew: %w", reply), false},
		{"deadline", context.DeadlineExceeded, true},
		{"eof", io.EOF, true},
		{"network", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}, true},
		{"closed client", redis.ErrClosed, true},
	} {
		require.Equal(t, tc.want, linkFailure(tc.err), tc.name)
	}
}

// sentCmd is one command a client sent, as its hook saw it.
type sentCmd struct {
	name, script string // script: the source of an EVAL
	start, end   time.Time
	err          error
}

// cmdLog is a go-redis hook recording every command a client sends.
type cmdLog struct {
	mu   sync.Mutex
	cmds []sentCmd
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		l.add(start, err, cmd)
		return err
	}
}

func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		l.add(start, err, cmds...)
		return err
	}
}

func (l *cmdLog) add(start time.Time, err error, cmds ...redis.Cmder) {
	end := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cmds {
		sc := sentCmd{name: c.Name(), start: start, end: end, err: err}
		if args := c.Args(); sc.name == "eval" && len(args) > 1 {
			sc.script = fmt.Sprint(args[1])
		}
		l.cmds = append(l.cmds, sc)
	}
}

// writesAfter returns the end of the first command started after from that got no reply, and every
// acquire or renewal (EVALSHA, or EVAL of another script than release) started between that end + grace
// and until.
func (l *cmdLog) writesAfter(from, until time.Time, grace time.Duration) (time.Time, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var failed time.Time
	for _, c := range l.cmds {
		if c.start.After(from) && linkFailure(c.err) && (failed.IsZero() || c.end.Before(failed)) {
			failed = c.end
		}
	}
	if failed.IsZero() {
		return failed, nil
	}
	var out []string
	for _, c := range l.cmds {
		write := c.name == "evalsha" || (c.name == "eval" && c.script != releaseLua)
		if write && c.start.After(failed.Add(grace)) && c.start.Before(until) {
			out = append(out, c.name+" at "+c.start.Sub(from).String())
		}
	}
	return failed, out
}

// The leader's requests reach Redis and take effect but every reply is lost. Its renewal times out, so
// it stops leading; its release (sent anyway) lands and lets a standby in at once, well before the TTL
// a blind renewal would have added; it sends no acquire or renewal while its probes go unanswered, and
// once the link heals it answers to the probe and follows the new leader.
func TestRedisOneWayPartitionStopsBlindWritesAndHandsOver(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	proxies := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("election-victim", env.srv.Addr())
	require.NoError(t, err)
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = link.Heal()
		}
	})
	log := &cmdLog{}
	vc := redis.NewClient(&redis.Options{
		Addr: link.Addr(), ContextTimeoutEnabled: true,
		DialTimeout: testOp, ReadTimeout: testOp, WriteTimeout: testOp,
		MinRetryBackoff: 5 * time.Millisecond, MaxRetryBackoff: 50 * time.Millisecond,
	})
	vc.AddHook(log)
	t.Cleanup(func() { _ = vc.Close() })
	victim := NewRedisBackend(vc, RedisOptions{Logger: testLogger(t)})

	// A TTL well above the takeover bound below, so that a takeover that had to wait for the holding to
	// expire (at least ttl-renew after the cut) fails the test. The victim's OpTimeout is generous so
	// that on a loaded machine its release (a dial, a handshake and one EVAL) still goes out in time.
	const ttl, renew, op = 8 * time.Second, 2 * time.Second, time.Second
	reg := prometheus.NewRegistry()
	role := uniqueRole(t)
	f := newFleet(t, 3,
		func(i int) Backend {
			if i == 0 {
				return victim
			}
			return NewRedisBackend(env.c, RedisOptions{})
		},
		func(i int) Config {
			cfg := testConfig(t, role, fmt.Sprintf("n%d", i), uint64(i+1))
			cfg.TTL, cfg.RenewInterval = ttl, renew
			if i == 0 {
				cfg.Registerer = reg
				cfg.OpTimeout = op
			}
			return cfg
		})
	metric := func(name string) float64 { return promtest.Value(t, reg, name, promtest.Label("role", role)) }
	startOne := func(e *Elector) {
		ctx, cancel := context.WithCancel(context.Background())
		f.cancels = append(f.cancels, cancel)
		require.NoError(t, e.Start(ctx))
	}
	// The victim alone first (the first grant of a role waits one TTL), then the standbys.
	startOne(f.es[0])
	first, _ := f.nextStart(t, ttl+10*time.Second)
	require.True(t, f.es[0].IsLeader())
	startOne(f.es[1])
	startOne(f.es[2])
	require.Eventually(t, func() bool { return f.es[1].Leader() == "n0" && f.es[2].Leader() == "n0" },
		10*time.Second, 5*time.Millisecond, "the standbys follow n0")
	require.Equal(t, 1.0, metric("tenure_election_link_healthy"))

	require.NoError(t, link.DropReplies())
	cut := time.Now()

	// Takeover bound, from the cut: the victim's next renewal is sent within RenewInterval and fails
	// after OpTimeout; its release takes at most OpTimeout to land (it lands at once); a standby is told
	// and acquires at once. 1.5 s of scheduling slack on a loaded machine: 5.5 s in all. A holding left
	// to expire would take at least ttl-renew (6 s).
	bound := renew + 2*op + 1500*time.Millisecond
	term, at := f.nextStart(t, 3*ttl)
	took := at.Sub(cut)
	t.Logf("one-way partition: a standby leads %s after the cut (bound %s)", took, bound)
	require.Greater(t, term, first)
	require.False(t, f.es[0].IsLeader())
	require.LessOrEqual(t, took, bound, "the standby waited for the holding to expire")

	// For a TTL more the victim never leads nor holds the key.
	rc := env.c
	leaderKey := "election:{" + role + "}:leader"
	require.Never(t, func() bool {
		v, err := rc.Get(context.Background(), leaderKey).Result()
		id, _, _ := parseHolding(v)
		return f.es[0].IsLeader() || (err == nil && id == "n0")
	}, ttl, 50*time.Millisecond, "the victim leads or holds the key while its replies are lost")

	// After its first unanswered call (plus OpTimeout for calls already past their probe), only probes,
	// reads and its release were sent.
	healedAt := time.Now()
	failed, writes := log.writesAfter(cut, healedAt, op)
	require.False(t, failed.IsZero(), "the victim saw a call go unanswered")
	require.Empty(t, writes, "blind acquires or renewals after the first unanswered call (%s after the cut)", failed.Sub(cut))
	require.False(t, victim.LinkHealthy())
	require.Equal(t, 0.0, metric("tenure_election_link_healthy"))
	require.Equal(t, 1.0, metric("tenure_election_link_unhealthy_total"))

	require.NoError(t, link.Heal())
	healed = true
	require.Eventually(t, func() bool { return victim.LinkHealthy() && f.es[0].Leader() != "" && f.es[0].Leader() != "n0" },
		10*time.Second, 5*time.Millisecond, "the victim answers to a probe and follows the new leader")
	require.Equal(t, 1.0, metric("tenure_election_link_healthy"))
	require.Equal(t, 1.0, metric("tenure_election_link_unhealthy_total"))
	f.finish(t)
}
