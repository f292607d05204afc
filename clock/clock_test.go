package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
)

// manual is a hand-driven base clock.
type manual struct {
	mu  sync.Mutex
	now time.Time
}

func (m *manual) Now() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.now }
func (m *manual) NewTimer(d time.Duration) clock.Timer {
	return clock.Real{}.NewTimer(d) // only the duration matters to these tests
}
func (m *manual) advance(d time.Duration) { m.mu.Lock(); m.now = m.now.Add(d); m.mu.Unlock() }

func TestDriftingRunsAtItsRate(t *testing.T) {
	base := &manual{now: time.Unix(1000, 0)}
	d := clock.NewDrifting(base, 1.5)
	start := d.Now()
	base.advance(10 * time.Second)
	require.Equal(t, 15*time.Second, d.Now().Sub(start))

	// A rate change keeps readings continuous: no jump at the change, the new rate afterwards.
	before := d.Now()
	d.SetRate(0.5)
	require.Equal(t, before, d.Now())
	base.advance(10 * time.Second)
	require.Equal(t, 5*time.Second, d.Now().Sub(before))
	require.Equal(t, 0.5, d.Rate())
}

func TestDriftingRejectsNonPositiveRates(t *testing.T) {
	require.Panics(t, func() { clock.NewDrifting(clock.Real{}, 0) })
	require.Panics(t, func() { clock.NewDrifting(clock.Real{}, 1).SetRate(-1) })
}

func TestDriftingTimerFiresOnLocalTime(t *testing.T) {
	// A clock running twice as fast fires a 200ms local timer after about 100ms of real time.
	d := clock.NewDrifting(clock.Real{}, 2)
	start := time.Now()
	tm := d.NewTimer(200 * time.Millisecond)
	<-tm.C()
	elapsed := time.Since(start)
	require.GreaterOrEqual(t, elapsed, 100*time.Millisecond, "a timer never fires early")
}

func TestSleepStopsEarlyWhenDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	require.False(t, clock.Sleep(clock.Real{}, time.Hour, done))
	require.True(t, clock.Sleep(clock.Real{}, 0, nil))
	require.True(t, clock.Sleep(clock.Real{}, time.Millisecond, make(chan struct{})))
}
