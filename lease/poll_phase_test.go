package lease

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// Leases granted together (at the end of the fresh-dataset guard, a whole fleet's at once) must not
// poll together for long: each polls at once, and its second poll comes at a random point of one
// PollInterval, so the second polls spread over most of an interval instead of the 10% of the
// per-wait jitter. Every wait stays within PollInterval.
func TestPollsOfLeasesGrantedTogetherSpread(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	setup := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(ctx, setup, "poll:"))

	eps := endpoints(40)
	log := newPollLog(time.Millisecond)
	cfg := testConfig()
	cfg.PollInterval = time.Second
	cfg.InstanceID = "a"
	cfg.Targets = StaticTargets(eps)
	cfg.Poll = log.pollFunc("a")
	cfg.Logger = quietLogger()
	const seed = 7
	t.Logf("seed %d", seed)
	cfg.Rand = rand.New(rand.NewSource(seed))
	m, err := New(newClient(t, srv.Addr()), cfg)
	require.NoError(t, err)
	mctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	require.NoError(t, m.Start(mctx))
	t.Cleanup(func() { _ = m.Stop(ctx) })

	require.Eventually(t, func() bool { return slices.Equal(m.Held(), eps) }, settle, 10*time.Millisecond)
	// All 40 were granted in one round trip; wait until each has polled twice.
	require.Eventually(t, func() bool {
		for _, ep := range eps {
			if len(log.pollsOf(ep)) < 2 {
				return false
			}
		}
		return true
	}, settle, 10*time.Millisecond)
	var seconds []time.Time
	for _, ep := range eps {
		p := log.pollsOf(ep)
		gap := p[1].start.Sub(p[0].start)
		// The wait is at most PollInterval; the poll itself and scheduling add a little.
		require.LessOrEqual(t, gap, cfg.PollInterval+250*time.Millisecond, "%s waited longer than PollInterval between polls", ep)
		seconds = append(seconds, p[1].start)
	}
	slices.SortFunc(seconds, func(a, b time.Time) int { return a.Compare(b) })
	spread := seconds[len(seconds)-1].Sub(seconds[0])
	// 40 draws from one interval span most of it: below a quarter with probability under 1e-20. With
	// only the 10% jitter they span at most a tenth, plus scheduling.
	require.Greater(t, spread, cfg.PollInterval/4, "the second polls of leases granted together came within %v of each other", spread)
}
