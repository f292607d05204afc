package lease

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/promtest"
)

// instanceValue returns the value of the gauge or counter name for instance id on reg (0 if absent).
func instanceValue(t *testing.T, reg *prometheus.Registry, name, id string) float64 {
	t.Helper()
	return promtest.Value(t, reg, name, promtest.Label("instance", id))
}

// sentCmd is one command a client started, as its hook saw it.
type sentCmd struct {
	name       string
	start, end time.Time
	err        error
}

// cmdRecorder is a go-redis hook that records every command the client sends, pipelined or not.
type cmdRecorder struct {
	mu   sync.Mutex
	cmds []sentCmd
}

func (r *cmdRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *cmdRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		r.add(start, err, cmd)
		return err
	}
}

func (r *cmdRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		r.add(start, err, cmds...)
		return err
	}
}

func (r *cmdRecorder) add(start time.Time, err error, cmds ...redis.Cmder) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		r.cmds = append(r.cmds, sentCmd{name: c.Name(), start: start, end: end, err: err})
	}
}

// writesAfterFailure returns the first failure of a manager call (heartbeat, script, discovery or
// publish) that started after from and ended in no reply, and every command other than a probe or a
// connection handshake that started between that failure + grace and until.
func (r *cmdRecorder) writesAfterFailure(from, until time.Time, grace time.Duration) (time.Time, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var failed time.Time
	for _, c := range r.cmds {
		var ne net.Error
		timedOut := errors.Is(c.err, context.DeadlineExceeded) || (errors.As(c.err, &ne) && ne.Timeout())
		if c.start.After(from) && timedOut && slices.Contains([]string{"set", "evalsha", "eval", "scan", "publish"}, c.name) &&
			(failed.IsZero() || c.end.Before(failed)) {
			failed = c.end
		}
	}
	if failed.IsZero() {
		return failed, nil
	}
	var out []string
	for _, c := range r.cmds {
		if c.start.After(failed.Add(grace)) && c.start.Before(until) && !slices.Contains([]string{"ping", "hello", "client"}, c.name) {
			out = append(out, c.name+" at "+c.start.Sub(from).String())
		}
	}
	return failed, out
}

// One instance's requests reach Redis and take effect but every reply is lost. The instance must stop
// writing, so that its leases and heartbeat expire and the others take its endpoints over; once the
// link heals it rejoins and the fleet rebalances.
func TestOneWayPartitionHandsOverAndRejoins(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 9)
	proxies := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("lease-c", srv.Addr())
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	f.cfg.Registerer = reg
	cfg := f.cfg
	f.start("a")
	f.start("b")
	rec := &cmdRecorder{}
	c := f.startAt("c", link.Addr(), rec)
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	require.Equal(t, 1.0, instanceValue(t, reg, "tenure_lease_link_healthy", "c"))

	victim := c.Held()
	require.Len(t, victim, 3)
	require.NoError(t, link.DropReplies())
	cut := time.Now()
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = link.Heal()
		}
	})

	// Bound on the takeover of each endpoint c held, from the start of the partition: the leases and the
	// heartbeat run out LeaseTTL (= HeartbeatTTL) after c's last write, the others notice at their next
	// discovery round and poll at once (PollInterval covers a poll loop's first wait). Tolerance: c's
	// first call after the cut fails after OpTimeout, at most one RenewInterval (= HeartbeatInterval)
	// in; a write already in flight may land up to OpTimeout after that; plus 1s of scheduling slack
	// on a loaded machine.
	tolerance := cfg.RenewInterval + 2*cfg.OpTimeout + time.Second
	bound := cfg.LeaseTTL + cfg.DiscoveryInterval + cfg.PollInterval + tolerance
	takeover := func(ep string) (time.Duration, bool) {
		var first time.Duration
		found := false
		for _, p := range f.log.pollsOf(ep) {
			if p.instance != "c" && p.start.After(cut) && (!found || p.start.Sub(cut) < first) {
				first, found = p.start.Sub(cut), true
			}
		}
		return first, found
	}
	require.Eventually(t, func() bool {
		for _, ep := range victim {
			if _, ok := takeover(ep); !ok {
				return false
			}
		}
		return true
	}, bound+settle, 20*time.Millisecond, "the others take over every endpoint c held")
	var worst time.Duration
	for _, ep := range victim {
		d, _ := takeover(ep)
		worst = max(worst, d)
		require.LessOrEqual(t, d, bound, "takeover of %s under a one-way partition", ep)
	}
	t.Logf("one-way partition: all of c's endpoints polled by others within %s (bound %s)", worst, bound)
	require.Equal(t, 0.0, instanceValue(t, reg, "tenure_lease_link_healthy", "c"))
	require.Equal(t, 1.0, instanceValue(t, reg, "tenure_lease_link_unhealthy_total", "c"))

	// For the rest of the partition (3×LeaseTTL in all) c makes no blind writes: no key names it, it
	// holds nothing, and a and b keep every endpoint.
	rc := newClient(t, srv.Addr())
	ctx := context.Background()
	require.Never(t, func() bool {
		if len(c.Held()) > 0 || rc.Exists(ctx, "poll:node:c").Val() != 0 {
			return true
		}
		for _, ep := range eps {
			if rc.Get(ctx, "poll:lease:"+ep).Val() == "c" {
				return true
			}
		}
		return false
	}, time.Until(cut.Add(3*cfg.LeaseTTL)), 100*time.Millisecond, "c wrote while its replies were lost")
	require.True(t, f.settled(eps, 0, 5), "a and b hold every endpoint during the partition")

	// c sent nothing but probes after its first unanswered call (beyond calls already past their
	// health check then, which end within OpTimeout).
	healedAt := time.Now()
	failed, writes := rec.writesAfterFailure(cut, healedAt, cfg.OpTimeout)
	require.False(t, failed.IsZero(), "c saw a call time out")
	require.Empty(t, writes, "c sent commands other than probes %s after the cut, once unhealthy", failed.Sub(cut))
	t.Logf("c's first unanswered call ended %s after the cut", failed.Sub(cut))

	require.NoError(t, link.Heal())
	healed = true
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond, "c rejoins and the fleet rebalances")
	t.Logf("rebalanced %s after the link healed", time.Since(healedAt))
	require.Equal(t, 1.0, instanceValue(t, reg, "tenure_lease_link_healthy", "c"))
	require.Equal(t, 1.0, instanceValue(t, reg, "tenure_lease_link_unhealthy_total", "c"))
	for _, id := range []string{"a", "b"} {
		require.Equal(t, 0.0, instanceValue(t, reg, "tenure_lease_link_unhealthy_total", id), "%s's link never failed", id)
	}
}
