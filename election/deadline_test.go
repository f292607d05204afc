package election

import (
	"context"
	"fmt"
	"sync"
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
	t.Parallel()
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
	t.Parallel()
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

func TestDeadlineArithmetic(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		drift  float64
		margin time.Duration
		want   time.Duration // validity: how long after the send time the holder may act
	}{
		{"no drift, no margin", 10 * time.Second, 0, 0, 10 * time.Second},
		{"drift shrinks the TTL", 10 * time.Second, 0.01, 0, 9900 * time.Millisecond},
		{"margin on top of drift", 10 * time.Second, 0.01, 200 * time.Millisecond, 9700 * time.Millisecond},
		{"large drift", 2 * time.Second, 0.25, 100 * time.Millisecond, 1400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.TTL, cfg.DriftBound, cfg.SafetyMargin = tc.ttl, tc.drift, tc.margin
			require.Equal(t, tc.want, cfg.validity())
			require.Equal(t, sent.Add(tc.want), cfg.deadline(sent), "counted from the send time")
		})
	}
}

// slowBackend grants at once and answers each renewal after delay, recording when it was called.
type slowBackend struct {
	hangingBackend
	clock clock.Clock
	delay time.Duration
	mu    sync.Mutex
	calls []time.Time
}

func (b *slowBackend) Renew(ctx context.Context, _, _ string, _ uint64, _ time.Duration) error {
	b.mu.Lock()
	b.calls = append(b.calls, b.clock.Now())
	b.mu.Unlock()
	t := time.NewTimer(b.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A renewal's reply that comes late moves the deadline to its send time + validity, never to its reply
// time + validity: the slower the reply, the less of the renewed validity is left.
func TestLateRenewalReplyDoesNotExtendTheDeadline(t *testing.T) {
	t.Parallel()
	b := &slowBackend{clock: clock.Real{}, delay: 150 * time.Millisecond}
	cfg := testConfig(t, "r", "a", 1)
	cfg.TTL, cfg.RenewInterval, cfg.OpTimeout, cfg.SafetyMargin = time.Second, 300*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
	cfg.StartJitter = 0
	type report struct {
		until time.Time
		at    time.Time
	}
	reports := make(chan report, 16)
	cfg.OnValidUntil = func(_ uint64, until time.Time) { reports <- report{until, time.Now()} }
	e, err := New(b, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	before := time.Now()
	require.NoError(t, e.Start(ctx))
	acq := <-reports
	require.False(t, acq.until.Before(before.Add(cfg.validity())), "acquisition: sent after Start began")
	require.False(t, acq.until.After(acq.at.Add(cfg.validity())), "acquisition: counted from the send time")
	for range 2 {
		var r report
		select {
		case r = <-reports:
		case <-time.After(5 * time.Second):
			t.Fatal("no renewal confirmed")
		}
		b.mu.Lock()
		called := b.calls[len(b.calls)-1]
		b.mu.Unlock()
		require.False(t, r.until.After(called.Add(cfg.validity())), "the deadline is counted from before the call, not from the reply")
		require.Less(t, r.until.Sub(r.at), cfg.validity()-b.delay+time.Millisecond, "a late reply leaves less validity")
	}
	require.NoError(t, e.Stop(context.Background()))
}
