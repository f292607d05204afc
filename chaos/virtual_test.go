package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/internal/bubble"
)

// virtualLink runs f in a bubble with a virtual Redis, a virtual link to it, a client through the link
// (calls bounded by a second, no retries) and one straight to the Redis.
func virtualLink(t *testing.T, f func(l chaos.Link, c, direct *redis.Client)) {
	t.Helper()
	bubble.ForTest(t)
	if err := bubble.Run(func() {
		v, err := deploy.OpenVirtual("none", 1)
		if err != nil {
			t.Error(err)
			return
		}
		defer v.Close()
		p := chaos.NewVirtual(1, v.Dial)
		defer p.Close()
		l, err := p.NewLink("slot-0", deploy.VirtualAddr)
		if err != nil {
			t.Error(err)
			return
		}
		c := redis.NewClient(&redis.Options{Addr: l.Addr(), Dialer: p.Dial, MaxRetries: -1, DialTimeout: time.Second,
			ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true})
		defer c.Close()
		direct := redis.NewClient(&redis.Options{Addr: deploy.VirtualAddr, Dialer: v.Dial})
		defer direct.Close()
		f(l, c, direct)
	}); err != nil {
		t.Fatal(err)
	}
}

// rtt times one PING through c on the bubble's clock.
func rtt(c *redis.Client) (time.Duration, error) {
	t0 := time.Now()
	err := c.Ping(context.Background()).Err()
	return time.Since(t0), err
}

func TestVirtualLinkLatencyIsExact(t *testing.T) {
	virtualLink(t, func(l chaos.Link, c, _ *redis.Client) {
		if d, err := rtt(c); err != nil || d != 0 {
			t.Errorf("a healthy in-memory round trip took %s (%v), want 0 of the bubble's clock", d, err)
		}
		if err := l.Latency(400*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
		if d, err := rtt(c); err != nil || d != 400*time.Millisecond {
			t.Errorf("a round trip under 400ms latency took %s (%v)", d, err)
		}
		_ = l.Heal()
		if d, err := rtt(c); err != nil || d != 0 {
			t.Errorf("after Heal a round trip took %s (%v)", d, err)
		}
	})
}

func TestVirtualLinkPartitionAndOneWay(t *testing.T) {
	virtualLink(t, func(l chaos.Link, c, direct *redis.Client) {
		ctx := context.Background()
		_ = c.Ping(ctx).Err()
		_ = l.Partition()
		if d, err := rtt(c); err == nil || d != time.Second {
			t.Errorf("a PING through a partition: %s, %v; want a timeout after the 1s read bound", d, err)
		}
		_ = l.Heal()
		_ = l.DropReplies()
		if err := c.Set(ctx, "k", "landed", 0).Err(); err == nil {
			t.Error("a reply came back through a one-way partition")
		}
		if v := direct.Get(ctx, "k").Val(); v != "landed" {
			t.Errorf("the write sent through a one-way partition did not land: GET = %q", v)
		}
		_ = l.Heal()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Errorf("after Heal: %v", err)
		}
	})
}

func TestVirtualLinkHoldResetAndKill(t *testing.T) {
	virtualLink(t, func(l chaos.Link, c, direct *redis.Client) {
		ctx := context.Background()
		_ = c.Ping(ctx).Err()
		// Requests held 3 s: the caller gives up after 1 s, the write lands at 3 s.
		_ = l.Hold(true, 3*time.Second, "")
		sent := time.Now()
		if err := c.Set(ctx, "held", "1", 0).Err(); err == nil {
			t.Error("a held request was answered within its caller's bound")
		}
		time.Sleep(time.Until(sent.Add(2900 * time.Millisecond)))
		if direct.Exists(ctx, "held").Val() != 0 {
			t.Error("a held request landed early")
		}
		time.Sleep(200 * time.Millisecond)
		if direct.Exists(ctx, "held").Val() != 1 {
			t.Error("a held request never landed")
		}
		_ = l.EndHold()
		_ = l.Heal()
		if err := l.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx).Err(); err != nil { // its pooled connection was closed; a new one works
			if err := c.Ping(ctx).Err(); err != nil {
				t.Errorf("after Reset: %v", err)
			}
		}
		_ = l.Kill()
		if err := c.Ping(ctx).Err(); err == nil {
			t.Error("a killed link carried a PING")
		}
		_ = l.Heal()
		if err := c.Ping(ctx).Err(); err == nil {
			t.Error("Heal reopened a killed link")
		}
	})
}
