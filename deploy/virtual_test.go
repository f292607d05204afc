package deploy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/bubble"
)

// inBubble runs f in a virtual-time bubble with a virtual Redis of persistence p and a client of it.
func inBubble(t *testing.T, p string, f func(v *deploy.Virtual, c *redis.Client)) {
	t.Helper()
	bubble.ForTest(t)
	if err := bubble.Run(func() {
		v, err := deploy.OpenVirtual(p, 1)
		if err != nil {
			t.Error(err)
			return
		}
		defer v.Close()
		c := redis.NewClient(&redis.Options{Addr: deploy.VirtualAddr, Dialer: v.Dial, MaxRetries: 3, ReadTimeout: 5 * time.Second, DialTimeout: time.Second})
		defer c.Close()
		f(v, c)
	}); err != nil {
		t.Fatal(err)
	}
}

func runID(t *testing.T, c *redis.Client) string {
	t.Helper()
	// Read from a script, as the lease's acquire reads it.
	v, err := c.Eval(context.Background(), "local i = redis.pcall('INFO', 'server'); return string.match(i, 'run_id:(%x+)') or ''", nil).Text()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVirtualRedisRestartsEmptyWithANewRunID(t *testing.T) {
	inBubble(t, "none", func(v *deploy.Virtual, c *redis.Client) {
		ctx := context.Background()
		first := runID(t, c)
		if len(first) != 40 || first != v.RunID() {
			t.Errorf("run_id %q (deployment says %q), want 40 hex digits, the same", first, v.RunID())
		}
		c.Set(ctx, "k", "v", 0)
		if err := v.Kill(ctx, "redis-0"); err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx).Err(); err == nil {
			t.Error("a killed virtual Redis answered")
		}
		if _, err := v.StartKilled(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
			t.Errorf("after a restart: EXISTS k = %d, %v; want an empty dataset", n, err)
		}
		if second := runID(t, c); second == first || len(second) != 40 {
			t.Errorf("run_id after a restart %q, before %q: want a new one", second, first)
		}
	})
}

func TestVirtualRedisReloadsItsSnapshotAndItsExpiries(t *testing.T) {
	inBubble(t, "rdb", func(v *deploy.Virtual, c *redis.Client) {
		ctx := context.Background()
		c.Set(ctx, "kept", "1", 0)
		c.Set(ctx, "short", "1", 2*time.Second)
		c.Set(ctx, "long", "1", 10*time.Second)
		c.HSet(ctx, "h", "f", "x")
		if err := v.Save(ctx); err != nil {
			t.Fatal(err)
		}
		c.Set(ctx, "after", "1", 0) // not in the snapshot
		before := runID(t, c)
		time.Sleep(3 * time.Second)
		if err := v.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]int64{"kept": 1, "short": 0, "long": 1, "h": 1, "after": 0} {
			if n, err := c.Exists(ctx, k).Result(); err != nil || n != want {
				t.Errorf("after the reload EXISTS %s = %d, %v; want %d", k, n, err, want)
			}
		}
		// The expiry is absolute, as an RDB file keeps it: 10 s from the save, 3 s of which have gone
		// (and the client's re-dial backoff after the restart, a few milliseconds).
		if ttl := c.PTTL(ctx, "long").Val(); ttl > 7*time.Second || ttl < 6900*time.Millisecond {
			t.Errorf("PTTL long after the reload = %s, want 7s (less the client's reconnection)", ttl)
		}
		if runID(t, c) == before {
			t.Error("a reloaded process kept its run_id")
		}
	})
}

func TestVirtualRedisPauseQueuesCommandsAndTTLsRunOn(t *testing.T) {
	inBubble(t, "none", func(v *deploy.Virtual, c *redis.Client) {
		ctx := context.Background()
		c.Set(ctx, "k", "v", time.Second)
		resume, err := v.Pause(ctx, "redis-0")
		if err != nil {
			t.Fatal(err)
		}
		answered := make(chan time.Time, 1)
		sent := time.Now()
		go func() {
			if err := c.Get(ctx, "k").Err(); err != nil && err != redis.Nil {
				t.Errorf("GET during the pause: %v", err)
			}
			answered <- time.Now()
		}()
		time.Sleep(700 * time.Millisecond)
		select {
		case <-answered:
			t.Error("a paused virtual Redis answered")
		default:
		}
		time.Sleep(800 * time.Millisecond) // the key's TTL runs out while paused
		_ = resume()
		at := <-answered
		if d := at.Sub(sent); d != 1500*time.Millisecond {
			t.Errorf("the queued GET was answered %s after it was sent, want 1.5s (at the resume)", d)
		}
		if n := c.Exists(ctx, "k").Val(); n != 0 {
			t.Error("a key whose TTL ran out during the pause is still there")
		}
	})
}

func TestVirtualRedisRefusesWhatItCannotBe(t *testing.T) {
	if _, err := deploy.OpenVirtual("aof", 1); !errors.Is(err, deploy.ErrUnsupported) || !strings.Contains(err.Error(), "--redis server:aof") {
		t.Errorf("OpenVirtual(aof) = %v, want a refusal naming the real mode", err)
	}
	inBubble(t, "none", func(v *deploy.Virtual, c *redis.Client) {
		if err := v.Save(context.Background()); !errors.Is(err, deploy.ErrUnsupported) {
			t.Errorf("Save without persistence = %v, want a refusal", err)
		}
		if _, err := v.PeerLink("redis-0"); !errors.Is(err, deploy.ErrUnsupported) {
			t.Errorf("PeerLink = %v, want a refusal", err)
		}
	})
}
