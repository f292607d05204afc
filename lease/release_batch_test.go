package lease

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// releaseTrips counts the round trips that carry handoff releases and the releases in them.
type releaseTrips struct {
	mu              sync.Mutex
	trips, releases int
}

func (r *releaseTrips) count(cmds []redis.Cmder) {
	n := 0
	for _, c := range cmds {
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.HasPrefix(s, "release ") {
				n++ // the announcement argument: only handoffs and Stop announce
				break
			}
		}
	}
	if n > 0 {
		r.mu.Lock()
		r.trips++
		r.releases += n
		r.mu.Unlock()
	}
}

func (r *releaseTrips) get() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trips, r.releases
}

func (r *releaseTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *releaseTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.count([]redis.Cmder{cmd}); return next(ctx, cmd) }
}
func (r *releaseTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.count(cmds); return next(ctx, cmds) }
}

// A rebalancing hands off many endpoints at once. Their releases share round trips (those queued
// while one is in flight go in the next), instead of one round trip each, which at scale exhausted
// the connection pool, timed out and took the instance's link down.
func TestHandoffReleasesShareRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	setup := newClient(t, srv.Addr())
	require.NoError(t, MarkEstablished(ctx, setup, "poll:"))
	eps := endpoints(60)
	addSessions(t, setup, eps)

	cfg := testConfig()
	f := newFleet(t, srv.Addr(), cfg)
	rt := &releaseTrips{}
	f.startAt("a", srv.Addr(), rt)
	require.Eventually(t, func() bool { return f.settled(eps, 60, 60) }, settle, 10*time.Millisecond)

	f.start("b") // a hands half of its endpoints to b
	require.Eventually(t, func() bool { return f.settled(eps, 30, 30) }, settle, 10*time.Millisecond)
	require.Empty(t, f.log.overlaps())
	trips, releases := rt.get()
	t.Logf("%d handoff releases in %d round trips", releases, trips)
	require.GreaterOrEqual(t, releases, 30, "a released what it handed off")
	require.LessOrEqual(t, trips, releases/3, "the handoff releases went one round trip each")
}
