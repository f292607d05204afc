package lease

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Redis restart with an empty dataset: old holders stop (their renewals fail or find nothing), the
// fresh-dataset guard grants nothing for one TTL, and the new grants carry larger fencing tokens.
func TestRedisRestartFencingAndGuard(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 6)
	f.cfg.Targets = StaticTargets(eps) // the restart wipes session keys too; keep the targets stable
	a := f.start("a")
	b := f.start("b")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	before := map[string]uint64{}
	for _, e := range f.log.eventsFor("") {
		before[e.Endpoint] = max(before[e.Endpoint], e.Token)
	}

	restarted := time.Now() // the new, empty server cannot have answered anyone before this
	require.NoError(t, srv.Restart())
	cfg := testConfig()
	require.Eventually(t, func() bool { return len(a.Held())+len(b.Held()) == 0 }, settle, 10*time.Millisecond,
		"holders stop believing once renewals fail or find the keys gone")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)

	var first time.Time
	for _, e := range f.log.eventsFor("") {
		if e.Kind != EventAcquired || e.At.Before(restarted) {
			continue
		}
		if first.IsZero() || e.At.Before(first) {
			first = e.At
		}
		require.Greater(t, e.Token, before[e.Endpoint], "fencing token of %s went backwards across the restart", e.Endpoint)
	}
	t.Logf("first grant %s after the restart", first.Sub(restarted))
	// The guard starts at the first acquire attempt after the restart. Redis's TIME and Go's clock read
	// the same system clock; 20ms covers the difference between wall and monotonic readings.
	require.GreaterOrEqual(t, first.Sub(restarted), cfg.LeaseTTL-20*time.Millisecond, "granted inside the guard window")
	for _, ep := range eps {
		require.Eventually(t, func() bool {
			return slices.ContainsFunc(f.log.pollsOf(ep), func(p pollRecord) bool { return p.start.After(first) })
		}, settle, 10*time.Millisecond, "%s polled again", ep)
	}
}

// A Redis restart that loads a snapshot older than the leases: the epoch comes back, the leases do
// not. No grant may come before one TTL has passed since the restart.
func TestRedisRestartFromOlderSnapshotHoldsGrants(t *testing.T) {
	t.Parallel()
	f, srv, eps := realFleet(t, 6)
	f.cfg.Targets = StaticTargets(eps)
	c := newClient(t, srv.Addr())
	require.NoError(t, c.Save(context.Background()).Err()) // epoch and sessions, no lease yet
	f.start("a")
	f.start("b")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)

	restarted := time.Now()
	require.NoError(t, srv.Reload()) // loads the snapshot
	require.EqualValues(t, 1, c.Exists(context.Background(), "poll:epoch").Val(), "the snapshot brought the epoch back")
	var first time.Time
	require.Eventually(t, func() bool {
		for _, e := range f.log.eventsFor("") {
			if e.Kind == EventAcquired && e.At.After(restarted) && (first.IsZero() || e.At.Before(first)) {
				first = e.At
			}
		}
		return !first.IsZero()
	}, settle, 20*time.Millisecond, "granted again after the restart")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	require.False(t, first.IsZero())
	t.Logf("first grant %s after the restart", first.Sub(restarted))
	require.GreaterOrEqual(t, first.Sub(restarted), testConfig().LeaseTTL-20*time.Millisecond, "granted inside the guard window")
}
