package lease

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// A handoff whose releaser saw a change of the targets before the next owner did: the next owner
// hears the release of an endpoint that its own, older view gives to someone else. It must read the
// targets again then, and take the endpoint at once ("fast handoff"), not at its next discovery tick.
// (sessions-change, campaign seeds 99780540, 433024573, 374609155, 395940010: a session added and one
// removed moved ep-0 from i1 to i0; i1's tick saw it first, and i0 took ep-0 only at its own tick,
// 102 ms after the release against a 101 ms bound.)
func TestAReleaseFromANewerViewIsTakenAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr())
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, c, "poll:"))
	eps := endpoints(6)
	addSessions(t, c, eps)
	cfg := testConfig()
	// Ticks too rare to matter: the owners learn of changes only by being told.
	cfg.DiscoveryInterval, cfg.SessionResync = time.Minute, time.Minute
	f := newFleet(t, srv.Addr(), cfg)
	a, b := f.start("a"), f.start("b")
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)

	// A new session that moves one of a's endpoints to b.
	var added, moved string
	for i := 0; i < 1000 && moved == ""; i++ {
		s := fmt.Sprintf("new%03d", i)
		now := Assign([]string{"a", "b"}, eps)
		next := Assign([]string{"a", "b"}, append(slices.Clone(eps), s))
		for _, ep := range eps {
			if now[ep] == "a" && next[ep] == "b" && slices.Contains(a.Held(), ep) {
				added, moved = s, ep
				break
			}
		}
	}
	require.NotEmpty(t, moved, "no new session moves an endpoint of a's to b")
	addSessions(t, c, []string{added})
	require.NoError(t, c.Incr(ctx, SessionVersionKey("")).Err())

	a.kick(a.discoverKick) // a's tick comes first: it sees the new session and hands moved off
	require.Eventually(t, func() bool { return !slices.Contains(a.Held(), moved) }, settle, 5*time.Millisecond)
	released := time.Now()
	require.Eventually(t, func() bool { return slices.Contains(b.Held(), moved) }, 10*time.Second, 5*time.Millisecond,
		"b heard a release of %s, which its view gave to a, and did not read the targets again", moved)
	t.Logf("%s released by a, held by b within %v", moved, time.Since(released).Round(time.Microsecond))
	require.Eventually(t, func() bool { return f.settled(append(slices.Clone(eps), added), 3, 4) }, settle, 20*time.Millisecond)
}
