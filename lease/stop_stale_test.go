package lease

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// An acquire whose reply was lost may have landed: the value stays ours in Redis, unbelieved, until
// it is released or expires. Stop must release it too (a graceful stop, and a Stop after a crash);
// otherwise the endpoint's next owner waits up to one LeaseTTL for it, where a graceful handoff takes
// milliseconds.
func TestStopReleasesUnconfirmedValues(t *testing.T) {
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
			d.arm(acquireScript.Hash())
			cfg := testConfig()
			// Long intervals: the link stays unhealthy after the lost reply (no re-acquire) for
			// RenewInterval/2, far longer than the test needs to stop the manager.
			cfg.LeaseTTL, cfg.RenewInterval = 20*time.Second, 6*time.Second
			cfg.InstanceID = "a"
			cfg.Targets = StaticTargets([]string{"ep-0"})
			cfg.Poll = newPollLog(5 * time.Millisecond).pollFunc("a")
			cfg.Logger = quietLogger()
			client := newClient(t, srv.Addr(), func(o *redis.Options) {
				o.Dialer = d.dialer
				o.MaxRetries = -1 // the lost reply is an error: nothing re-sends the acquire
			})
			m, err := New(client, cfg)
			require.NoError(t, err)
			mctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			require.NoError(t, m.Start(mctx))

			stale := func() string {
				m.mu.Lock()
				defer m.mu.Unlock()
				if s := m.slots["ep-0"]; s != nil && s.state == epFree && len(s.stale) > 0 {
					return s.stale[len(s.stale)-1].value
				}
				return ""
			}
			require.Eventually(t, func() bool { return stale() != "" }, settle, 5*time.Millisecond,
				"the acquire's reply was lost: its value is kept as stale")
			v := stale()
			got, err := setup.Get(ctx, "poll:lease:ep-0").Result()
			require.NoError(t, err)
			require.Equal(t, v, got, "the acquire landed although its reply was lost")
			require.Empty(t, m.Held())

			if crash {
				cancel()
			}
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			defer scancel()
			require.NoError(t, m.Stop(sctx))
			n, err := setup.Exists(ctx, "poll:lease:ep-0").Result()
			require.NoError(t, err)
			require.Zero(t, n, "Stop left the unconfirmed value %s in Redis: the next owner waits for it to expire", v)
		})
	}
}
