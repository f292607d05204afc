package lease

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// A renewal of v1 lands but its reply is lost: v1 is stale, maybe still in Redis. The next acquire
// pass sends release(v1) and acquire(v2) in one pipeline, and that request is lost before it reaches
// Redis: v1 is still there, v2 never was, and neither call tells which. Both values must be
// remembered, so that Stop releases v1 as well (a graceful stop, and a Stop after a crash); a slot
// that remembered only its last value would leave v1 to refuse the next owner for up to one TTL.
func TestStopReleasesEveryStaleValue(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		name := "graceful"
		if crash {
			name = "after crash"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := context.Background()
			setup := newClient(t, srv.Addr())
			require.NoError(t, MarkEstablished(ctx, setup, "poll:"))

			d := &replyDropper{}
			cfg := testConfig()
			cfg.InstanceID = "a"
			cfg.Targets = StaticTargets([]string{"ep-0"})
			cfg.Poll = newPollLog(5 * time.Millisecond).pollFunc("a")
			cfg.Logger = quietLogger()
			client := newClient(t, srv.Addr(), func(o *redis.Options) {
				o.Dialer = d.dialer
				o.MaxRetries = -1 // a lost reply is an error: nothing re-sends the call
			})
			m, err := New(client, cfg)
			require.NoError(t, err)
			mctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			require.NoError(t, m.Start(mctx))
			t.Cleanup(func() { _ = m.Stop(ctx) })

			require.Eventually(t, func() bool { return slices.Equal(m.Held(), []string{"ep-0"}) }, settle, 5*time.Millisecond)
			m.mu.Lock()
			v1 := m.slots["ep-0"].h.value
			m.mu.Unlock()

			d.arm(renewScript.Hash())          // the next renewal of v1 lands, its reply is lost
			d.armRequest(releaseScript.Hash()) // then release(v1)+acquire(v2) never reach Redis
			require.Eventually(t, func() bool {
				m.mu.Lock()
				defer m.mu.Unlock()
				s := m.slots["ep-0"]
				// The second attempt (v2) was sent, and its failure settled.
				return d.droppedCount() == 2 && m.attempts >= 2 && s != nil && s.state == epFree
			}, settle, 2*time.Millisecond, "the renewal's reply and then the release+acquire request were lost")
			got, err := setup.Get(ctx, "poll:lease:ep-0").Result()
			require.NoError(t, err)
			require.Equal(t, v1, got, "v1 is still the lease in Redis")

			if crash {
				cancel()
			}
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			defer scancel()
			require.NoError(t, m.Stop(sctx))
			left, err := setup.Get(ctx, "poll:lease:ep-0").Result()
			if err == nil {
				pttl, _ := setup.PTTL(ctx, "poll:lease:ep-0").Result()
				t.Fatalf("Stop left %s (v1 = %s) in Redis for another %s: the next owner waits for it to expire", left, v1, pttl)
			}
			require.ErrorIs(t, err, redis.Nil)
		})
	}
}

// A slot keeps every value that may still be in Redis until it is known gone or has expired there:
// the bookkeeping without Redis, on a clock moved by hand.
func TestSlotRemembersStaleValuesUntilGoneOrExpired(t *testing.T) {
	t.Parallel()
	clk := &manualClock{now: time.Unix(1000, 0)}
	cfg := testConfig()
	cfg.Clock = clk
	cfg.Targets = StaticTargets(nil)
	cfg.Poll = func(context.Context, Poll) error { return nil }
	m, err := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}), cfg)
	require.NoError(t, err)
	values := func() []string {
		var out []string
		if s := m.slots["ep-0"]; s != nil {
			for _, sv := range s.stale {
				out = append(out, sv.value)
			}
		}
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	m.freeLocked("ep-0", "v1") // a renewal of v1 went unanswered
	clk.advance(cfg.LeaseTTL)
	m.freeLocked("ep-0", "v2") // so did the next attempt, with the release of v1
	m.freeLocked("ep-0", "v2") // the same value twice is one value
	require.Equal(t, []string{"v1", "v2"}, values(), "both values may be in Redis")
	require.Len(t, staleHoldings("ep-0", m.slots["ep-0"]), 2, "Stop would release both")

	clk.advance(cfg.LeaseTTL + time.Millisecond) // v1 is more than 2*LeaseTTL old, v2 about one
	m.pruneStaleLocked()
	require.Equal(t, []string{"v2"}, values(), "v1 has expired in Redis, v2 may not have")

	m.slots["ep-0"].forgetStale("v2") // its release was answered
	m.freeLocked("ep-0", "")
	require.Nil(t, m.slots["ep-0"], "a free slot with nothing stale is dropped")

	m.freeLocked("ep-0", "v3")
	clk.advance(2*cfg.LeaseTTL + time.Millisecond)
	m.pruneStaleLocked()
	require.Nil(t, m.slots["ep-0"], "a free slot whose values all expired is dropped")
}
