package lease

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// In the cluster layout each endpoint's epoch key expires (it would otherwise outlive the endpoint
// for ever), but never while a lease on it can be live: an endpoint held for longer than the epoch's
// TTL would lose it while held, and its next grant (a graceful stop's handoff, a rebalance) would arm
// the fresh-dataset guard, leaving it unpolled for one LeaseTTL instead of milliseconds. The epoch
// TTL (max(24h, 100*LeaseTTL) in production) is shortened here so that the holdings outlast it.
func TestClusterLayoutRenewalsKeepEpochs(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	eps := endpoints(2)
	cfg := testConfig()
	cfg.KeyLayout = LayoutCluster
	cfg.Targets = StaticTargets(eps)
	admin := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablishedEndpoints(ctx, admin, cfg.KeyPrefix, eps))
	k := newKeys(cfg.KeyPrefix, LayoutCluster)

	const epochTTL = 7 * time.Second // above 2*LeaseTTL, as the production TTL is
	f := newFleet(t, srv.Addr(), cfg)
	for _, id := range []string{"a", "b"} {
		m := f.build(id)
		m.epochTTL = epochTTL
		mctx, cancel := context.WithCancel(ctx)
		require.NoError(t, m.Start(mctx))
		f.mu.Lock()
		f.members[id] = &member{m, cancel}
		f.mu.Unlock()
		t.Cleanup(func() {
			sctx, c := context.WithTimeout(ctx, 5*time.Second)
			defer c()
			_ = m.Stop(sctx)
			cancel()
		})
	}
	require.Eventually(t, func() bool { return f.settled(eps, 1, 1) }, settle, 10*time.Millisecond, "one endpoint each")

	// Hold them for longer than the epoch TTL after their last grant.
	lastGrant := func() time.Time {
		var at time.Time
		for _, e := range f.log.eventsFor("") {
			if e.Kind == EventAcquired && e.At.After(at) {
				at = e.At
			}
		}
		return at
	}
	require.Eventually(t, func() bool { return time.Since(lastGrant()) > epochTTL+cfg.RenewInterval },
		2*epochTTL, 50*time.Millisecond)
	require.True(t, f.settled(eps, 1, 1), "both endpoints still held, one each")
	for _, ep := range eps {
		pttl, err := admin.PTTL(ctx, k.epoch(ep)).Result()
		require.NoError(t, err)
		require.Positive(t, pttl, "%s's epoch key expired while its lease was held", ep)
	}

	// A graceful stop hands the stopped instance's endpoint over at once: no guard was re-armed.
	by, _ := f.holdings()
	gone := by[eps[0]][0]
	stay := "a"
	if gone == "a" {
		stay = "b"
	}
	stopped := time.Now()
	f.stop(gone)
	f.mu.Lock()
	survivor := f.members[stay].m
	f.mu.Unlock()
	require.Eventually(t, func() bool { return len(survivor.Held()) == len(eps) },
		cfg.LeaseTTL/2, 5*time.Millisecond, "the handoff waited for a guard (LeaseTTL %s)", cfg.LeaseTTL)
	t.Logf("handoff %s after the stop", time.Since(stopped).Round(time.Millisecond))
}
