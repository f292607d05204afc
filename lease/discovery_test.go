package lease

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
)

// handClock is a clock whose time and timers move only when the test advances it.
type handClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*handTimer
}

type handTimer struct {
	clk  *handClock
	at   time.Time
	c    chan time.Time
	done bool // guarded by clk.mu
}

func (t *handTimer) C() <-chan time.Time { return t.c }

func (t *handTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

func (c *handClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *handClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &handTimer{clk: c, at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	return t
}

func (c *handClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			t.c <- c.now
		}
	}
}

func (c *handClock) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// A burst of fleet announcements runs one discovery round at once and one more at the end of the
// window, however many announcements the burst holds; an announcement after a quiet spell runs at once.
func TestAnnouncementsAreCoalesced(t *testing.T) {
	clk := &handClock{now: time.Unix(1000, 0)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &Manager{cfg: Config{DiscoveryInterval: time.Second}, clock: clk, runCtx: ctx, discoverKick: make(chan struct{}, 1)}
	window := time.Second / joinWindowDivisor
	kicked := func() bool {
		select {
		case <-m.discoverKick:
			return true
		default:
			return false
		}
	}

	m.announced()
	require.True(t, kicked(), "the first announcement runs a round at once")
	for i := 0; i < 100; i++ {
		m.announced()
		clk.advance(window / 200)
	}
	require.False(t, kicked(), "announcements inside the window wait for its end")
	require.Eventually(t, func() bool { return clk.waiting() == 1 }, time.Second, time.Millisecond, "one round scheduled")
	clk.advance(window)
	require.Eventually(t, kicked, time.Second, time.Millisecond, "one round at the end of the window")
	require.Never(t, kicked, 50*time.Millisecond, time.Millisecond, "and only one")

	clk.advance(2 * window)
	m.announced()
	require.True(t, kicked(), "after a quiet spell an announcement runs a round at once")
}
