package lease

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// lateBeat is a go-redis hook that, once armed, holds the reply to the next heartbeat (the pipeline
// that sets the instance's node key) for d after Redis answered it, as a stall or held replies do, and
// notes, for each join the instance publishes after that, whether its node key was in Redis.
type lateBeat struct {
	d     time.Duration
	armed atomic.Bool
	held  atomic.Bool // the held heartbeat's reply has been handed back
	// live reads, as a join is published, whether the instance's node key is in Redis.
	live  func() bool
	mu    sync.Mutex
	joins []bool // for each "join" published after the held reply: was the node key there?
}

func (h *lateBeat) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lateBeat) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "publish" && len(cmd.Args()) > 2 {
			if s, ok := cmd.Args()[2].(string); ok && strings.HasPrefix(s, "join ") && h.held.Load() {
				live := h.live()
				h.mu.Lock()
				h.joins = append(h.joins, live)
				h.mu.Unlock()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *lateBeat) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Name() != "set" || len(c.Args()) < 2 {
				continue
			}
			if k, ok := c.Args()[1].(string); ok && strings.Contains(k, ":node:") && h.armed.CompareAndSwap(true, false) {
				time.Sleep(h.d)
				h.held.Store(true)
				break
			}
		}
		return err
	}
}

// joinsAfter returns, for each join published after the held reply, whether the node key was there.
func (h *lateBeat) joinsAfter() []bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bool(nil), h.joins...)
}

// A heartbeat's key lives HeartbeatTTL from when it landed, which may be long before its reply comes
// (a stall, held replies). A link recovery writes the heartbeat and then announces the instance
// ("join"), so that the others rebalance at once: the announcement is worth something only while the
// heartbeat is in Redis. Here the recovery's heartbeat is answered past the heartbeat TTL: its key has
// expired, and the instance must write it again before it announces itself. Announced with its key
// gone, the others read a fleet without it and ignore the join; counted from its reply, the next
// heartbeat looked one interval late, not lapsed, and the instance stayed silent: in a virtual-time run
// (explore seed 876394656) it held nothing for 75 s, until the others' periodic rescan found it.
func TestARecoveryAnnouncesTheInstanceOnlyWithItsHeartbeatInRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(ctx, admin, "poll:"))
	eps := endpoints(3)
	cfg := testConfig()
	cfg.Targets = StaticTargets(eps)
	f := newFleet(t, srv.Addr(), cfg)
	proxies := chaos.NewEmbedded(7)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("lease-late-beat", srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = link.Heal() })
	h := &lateBeat{d: cfg.HeartbeatTTL + 500*time.Millisecond}
	h.live = func() bool {
		n, err := admin.Exists(context.Background(), keys{prefix: "poll:"}.node("c")).Result()
		return err == nil && n == 1
	}
	c := f.startAt("c", link.Addr(), h)
	require.Eventually(t, func() bool { return len(c.Held()) == len(eps) }, settle, 20*time.Millisecond, "c holds every endpoint")

	require.NoError(t, link.Partition())
	require.Eventually(t, func() bool { return !c.linkHealthy() }, cfg.HeartbeatInterval+cfg.OpTimeout+settle, 10*time.Millisecond,
		"c's link goes unhealthy under the partition")
	h.armed.Store(true) // the recovery's heartbeat is answered late
	require.NoError(t, link.Heal())
	require.Eventually(t, func() bool { return len(h.joinsAfter()) > 0 }, cfg.RenewInterval+h.d+settle/4, 10*time.Millisecond,
		"c announces itself after the held heartbeat")
	require.True(t, h.joinsAfter()[0], "c announced itself with its heartbeat's key gone (its reply came %v after it was sent; heartbeat TTL %v)",
		h.d, cfg.HeartbeatTTL)
}
