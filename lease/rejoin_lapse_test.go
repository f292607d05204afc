package lease

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// An instance whose process was paused past its heartbeat's TTL comes back to a fleet that counted it
// gone: the others took its share, and, its heartbeat written again without a word, would find it only
// at their periodic rescan (nodeRescanRounds DiscoveryIntervals after their last, 12 s here). Its first
// heartbeat after the pause is written more than HeartbeatTTL after the one before, and it announces
// itself as a link recovery does: the others rebalance at once, and it polls its share again within a
// heartbeat interval, a round trip of discovery and a handoff.
//
// In recorded runs (explore seeds 567170517 and 123900358) the paused instance's return went unseen for
// 4.3 s, and the handoffs that followed it came from instances that had not all seen it yet, or reached
// an instance whose subscription a Redis restart during the pause had closed: each endpoint handed over
// waited 0.4 to 0.8 s for its new holder.
func TestAPausedInstanceAnnouncesItsReturn(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, newClient(t, srv.Addr()), "poll:"))
	eps := endpoints(9)
	cfg := testConfig()
	cfg.DiscoveryInterval = 2 * time.Second // the periodic rescan: 12 s
	cfg.Targets = StaticTargets(eps)
	f := newFleet(t, srv.Addr(), cfg)
	t.Cleanup(func() {
		if o := f.log.overlaps(); len(o) > 0 {
			t.Errorf("overlapping polls by different instances:\n%v", o)
		}
	})
	a := f.start("a")
	b := f.start("b")
	paused := clock.NewPausable(clock.Real{})
	f.cfg.Clock = paused
	c := f.start("c")
	f.cfg.Clock = nil
	t.Cleanup(paused.Resume) // a paused clock holds the manager's Stop
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)

	// Freeze c (its clock: every goroutine of its manager that reads the time stops there) until a and b
	// have taken its share: its heartbeat and leases run out.
	paused.Pause()
	require.Eventually(t, func() bool { return len(a.Held())+len(b.Held()) == len(eps) },
		cfg.HeartbeatTTL+cfg.LeaseTTL+settle, 20*time.Millisecond, "a and b take c's share while it is paused")
	// Past the window in which a and b rescan after an instance vanished (one HeartbeatTTL).
	time.Sleep(cfg.HeartbeatTTL)
	woke := time.Now()
	paused.Resume()

	bound := cfg.HeartbeatInterval + 2*cfg.OpTimeout + time.Second
	require.Eventually(t, func() bool { return len(c.Held()) == 3 && f.settled(eps, 3, 3) }, bound+cfg.LeaseTTL, 10*time.Millisecond,
		"the fleet rebalances after c's return")
	took := time.Since(woke)
	t.Logf("c held its share again %v after it woke (bound %v; a rescan would come up to %v later)", took.Round(time.Millisecond), bound, nodeRescanRounds*cfg.DiscoveryInterval)
	require.Less(t, took, bound, "c announced its return: the fleet did not wait for a rescan")
}
