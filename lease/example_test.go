package lease_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/lease"
)

func ExampleManager() {
	mr, err := miniredis.Run() // any Redis will do; miniredis keeps the example self-contained
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	mr.ClockTTL(true) // let miniredis TTLs run in real time, like Redis

	// ContextTimeoutEnabled makes the manager's per-call timeouts bound socket reads too.
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	ctx := context.Background()
	// A brand-new Redis: no holder from an earlier dataset can exist, so skip the one-TTL guard.
	if err := lease.MarkEstablished(ctx, client, "poll:"); err != nil {
		panic(err)
	}

	var mu sync.Mutex
	polled := map[string]uint64{}
	cfg := lease.DefaultConfig()
	cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 3*time.Second, time.Second, 500*time.Millisecond
	cfg.HeartbeatInterval, cfg.HeartbeatTTL, cfg.DiscoveryInterval = time.Second, 3*time.Second, time.Second
	cfg.PollInterval = 100 * time.Millisecond
	cfg.InstanceID = "example-1"
	cfg.Targets = lease.StaticTargets{"a", "b", "c"} // or nil: sessions under "session:" in Redis
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Poll = func(ctx context.Context, p lease.Poll) error {
		// ctx ends if the lease can no longer be vouched for; pass p.Token to the endpoint if it fences.
		mu.Lock()
		polled[p.Endpoint] = p.Token
		mu.Unlock()
		return nil
	}
	m, err := lease.New(client, cfg)
	if err != nil {
		panic(err)
	}
	if err := m.Start(ctx); err != nil {
		panic(err)
	}
	for len(m.Held()) < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("held:", m.Held())
	if err := m.Stop(ctx); err != nil {
		panic(err)
	}
	fmt.Println("held after stop:", m.Held())
	fmt.Println("lease key left behind:", mr.Exists("poll:lease:a"))
	// Output:
	// held: [a b c]
	// held after stop: []
	// lease key left behind: false
}

// The usual shutdown: a context cancelled by a signal is passed to Start, and Stop runs after it has
// ended. Cancelling the context stops all work at once (as a crash would); Stop then still releases the
// leases and tells the fleet, so the others take over within milliseconds rather than one lease TTL.
func ExampleManager_Stop() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	if err := lease.MarkEstablished(context.Background(), client, "poll:"); err != nil {
		panic(err)
	}
	cfg := lease.DefaultConfig()
	cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 3*time.Second, time.Second, 500*time.Millisecond
	cfg.InstanceID = "example-2"
	cfg.Targets = lease.StaticTargets{"a"}
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Poll = func(context.Context, lease.Poll) error { return nil }
	m, err := lease.New(client, cfg)
	if err != nil {
		panic(err)
	}

	// In a program: ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, signalled := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		panic(err)
	}
	for len(m.Held()) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	signalled() // SIGTERM arrives
	<-ctx.Done()

	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("stop:", m.Stop(stopCtx))
	fmt.Println("lease key left behind:", mr.Exists("poll:lease:a"))
	// Output:
	// stop: <nil>
	// lease key left behind: false
}
