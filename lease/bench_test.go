package lease

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// roundTrips counts requests the client sends: one per command, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// BenchmarkRenew10k measures one renewal pass over 10,000 held leases against a real redis-server:
// the time of the pass and the number of round trips it takes.
func BenchmarkRenew10k(b *testing.B) {
	const n = 10_000
	srv := redistest.Start(b)
	client := newClient(b, srv.Addr())
	ctx := context.Background()
	if err := MarkEstablished(ctx, client, "poll:"); err != nil {
		b.Fatal(err)
	}
	rt := &roundTrips{}
	client.AddHook(rt)
	targets := make(StaticTargets, n)
	for i := range targets {
		targets[i] = fmt.Sprintf("session-%05d", i)
	}
	cfg := DefaultConfig()
	cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 10*time.Minute, 5*time.Minute, 30*time.Second
	cfg.DiscoveryInterval, cfg.PollInterval = 5*time.Minute, 5*time.Minute
	cfg.HeartbeatInterval, cfg.HeartbeatTTL = 5*time.Minute, 10*time.Minute
	cfg.InstanceID, cfg.Targets, cfg.Logger = "bench", targets, quietLogger()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	m, err := New(client, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Stop(ctx) })
	deadline := time.Now().Add(time.Minute)
	for len(m.Held()) < n {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d leases acquired", len(m.Held()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.ResetTimer()
	start := rt.n.Load()
	for i := 0; i < b.N; i++ {
		m.renewPass()
	}
	b.StopTimer()
	if got := len(m.Held()); got != n {
		b.Fatalf("%d leases held after renewing, want %d", got, n)
	}
	b.ReportMetric(float64(rt.n.Load()-start)/float64(b.N), "round-trips/op")
	b.ReportMetric(float64(n), "leases")
}
