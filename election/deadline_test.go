package election

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
)

// hangingBackend grants the role at once and never answers a renewal, whatever its context says: the
// worst a partitioned client without socket timeouts can do.
type hangingBackend struct {
	release chan struct{}
	renews  atomic.Int32
}

func (b *hangingBackend) TryAcquire(context.Context, string, string, time.Duration) (uint64, bool, error) {
	return 1, true, nil
}

func (b *hangingBackend) Renew(context.Context, string, string, uint64, time.Duration) error {
	b.renews.Add(1)
	<-b.release
	return nil
}

func (b *hangingBackend) Release(context.Context, string, string, uint64) error { return nil }

func (b *hangingBackend) Leader(context.Context, string) (LeaderInfo, error) {
	return LeaderInfo{}, nil
}

func (b *hangingBackend) Close() error { return nil }

func TestLeaderContextEndsAtLocalDeadlineOnTheInjectedClock(t *testing.T) {
	for _, rate := range []float64{1, 2} {
		t.Run(fmt.Sprintf("rate %g", rate), func(t *testing.T) {
			b := &hangingBackend{release: make(chan struct{})}
			t.Cleanup(func() { close(b.release) })
			cfg := testConfig(t, "r", "a", 1)
			cfg.TTL, cfg.RenewInterval, cfg.OpTimeout, cfg.SafetyMargin = time.Second, 300*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
			cfg.StartJitter = 0
			cfg.Clock = clock.NewDrifting(clock.Real{}, rate)
			var sent atomic.Int64
			ended := make(chan time.Time, 1)
			cfg.OnStartedLeading = func(ctx context.Context, term uint64) {
				<-ctx.Done()
				require.ErrorIs(t, context.Cause(ctx), ErrDeadline)
				ended <- time.Now()
			}
			e, err := New(b, cfg)
			require.NoError(t, err)
			before := time.Now()
			sent.Store(before.UnixNano())
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			require.NoError(t, e.Start(ctx))
			at := <-ended
			// On a clock running rate times faster, the local deadline comes after validity/rate of
			// real time: the deadline is measured on the injected clock, not waited for from the backend.
			want := time.Duration(float64(cfg.validity()) / rate)
			got := at.Sub(before)
			t.Logf("rate %g: leader context ended after %s (validity %s on the clock)", rate, got, cfg.validity())
			require.Greater(t, got, want-5*time.Millisecond)
			require.Less(t, got, want+150*time.Millisecond, "scheduling tolerance")
			require.Less(t, got, cfg.TTL)
			require.Equal(t, int32(1), b.renews.Load(), "one renewal in flight; none stacked behind it")
			require.False(t, e.IsLeader())
		})
	}
}

func TestStopDoesNotHangOnAHungRenewal(t *testing.T) {
	b := &hangingBackend{release: make(chan struct{})}
	t.Cleanup(func() { close(b.release) })
	cfg := testConfig(t, "r", "a", 1)
	cfg.TTL, cfg.RenewInterval, cfg.OpTimeout, cfg.SafetyMargin = time.Second, 300*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
	e, err := New(b, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	require.Eventually(t, func() bool { return b.renews.Load() == 1 }, time.Second, time.Millisecond)
	require.True(t, e.IsLeader(), "inside the deadline while the renewal hangs")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	began := time.Now()
	require.NoError(t, e.Stop(ctx))
	require.Less(t, time.Since(began), cfg.OpTimeout+200*time.Millisecond)
	require.False(t, e.IsLeader())
}
