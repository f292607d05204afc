package lease

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// acquireCounter counts the acquire scripts a client sends.
type acquireCounter struct{ n atomic.Int64 }

func (c *acquireCounter) count(cmds ...redis.Cmder) {
	for _, cmd := range cmds {
		a := cmd.Args()
		if len(a) < 2 {
			continue
		}
		name, _ := a[0].(string)
		body, _ := a[1].(string)
		if (strings.EqualFold(name, "evalsha") && body == acquireScript.Hash()) ||
			(strings.EqualFold(name, "eval") && body == acquireSource) {
			c.n.Add(1)
		}
	}
}

func (c *acquireCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *acquireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.count(cmd); return next(ctx, cmd) }
}
func (c *acquireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.count(cmds...); return next(ctx, cmds) }
}

// On a fresh dataset the guard refuses the first batch; the manager then reads the guard's end, sends
// nothing more while it lasts (however many acquire ticks pass), and acquires once it has ended.
func TestGuardEndScheduledNotPolled(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // fresh: no MarkEstablished, so the first acquire arms the guard
	eps := endpoints(20)
	cfg := testConfig()
	cfg.LeaseTTL, cfg.HeartbeatTTL = 2*time.Second, 2*time.Second
	cfg.RenewInterval = 100 * time.Millisecond // about twenty acquire ticks during the guard
	cfg.OpTimeout = 80 * time.Millisecond
	cfg.HeartbeatInterval = 500 * time.Millisecond
	cfg.InstanceID, cfg.Targets, cfg.Logger = "solo", StaticTargets(eps), quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	var granted atomic.Int64 // acquire scripts sent up to the first grant, its own batch included
	acq := &acquireCounter{}
	cfg.Observe = func(e Event) {
		if e.Kind == EventAcquired {
			granted.CompareAndSwap(0, acq.n.Load())
		}
	}
	client := newClient(t, srv.Addr())
	client.AddHook(acq)
	m, err := New(client, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, m.Start(ctx))
	defer func() { _ = m.Stop(context.Background()) }()

	// The schedule is the guard's end as Redis recorded it.
	require.Eventually(t, func() bool { m.mu.Lock(); defer m.mu.Unlock(); return !m.guardUntil.IsZero() },
		settle, 5*time.Millisecond, "the guard's end is read after the refused batch")
	epoch, err := client.Get(ctx, "poll:epoch").Result()
	require.NoError(t, err)
	now, err := client.Time(ctx).Result()
	left, ok := guardLeft(epoch, now)
	require.NoError(t, err)
	require.True(t, ok, "epoch %q", epoch)
	read := time.Now()
	m.mu.Lock()
	until := m.guardUntil
	m.mu.Unlock()
	require.InDelta(t, float64(read.Add(left).UnixMilli()), float64(until.UnixMilli()), 100,
		"scheduled for the guard's end")

	require.Eventually(t, func() bool { return len(m.Held()) == len(eps) }, settle, 5*time.Millisecond)
	require.Equal(t, int64(2*len(eps)), granted.Load(),
		"one refused batch during the guard, then the granted one (acquire ticks during the guard send nothing)")
}

func TestGuardLeft(t *testing.T) {
	t.Parallel()
	now := time.UnixMicro(5_000_000)
	left, ok := guardLeft("7500000 0123abcd", now)
	require.True(t, ok)
	require.Equal(t, 2500*time.Millisecond, left)
	left, ok = guardLeft("4000000 ", now) // no run_id (a server whose scripts cannot read INFO)
	require.True(t, ok)
	require.Zero(t, left, "ended")
	for _, bad := range []string{"", "x 1", " "} {
		_, ok = guardLeft(bad, now)
		require.False(t, ok, "%q", bad)
	}
}
