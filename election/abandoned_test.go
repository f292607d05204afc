package election

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An acquire whose reply was lost may land after its caller gave up: the leader key then names an
// instance that does not lead. That instance's own next attempts are refused (a new attempt is not given
// an earlier holding), and so is everyone else's, until the key expires. The elector that finds the
// backend naming it with a term it does not lead releases that term and contends again at once, so the
// role has an acting leader long before that TTL.
func TestRedisAbandonedTermReleasedAtOnce(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	role := uniqueRole(t)
	const ttl = 30 * time.Second
	b := NewRedisBackend(env.c, RedisOptions{})
	require.NoError(t, b.MarkEstablished(t.Context(), role))
	// The landed acquire: a holding of "a" that no elector of "a" knows about.
	abandoned, ok, err := b.TryAcquire(t.Context(), role, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)

	var es []*Elector
	for i, id := range []string{"a", "b"} {
		cfg := testConfig(t, role, id, uint64(i))
		cfg.TTL, cfg.RenewInterval = ttl, 2*time.Second
		e, err := New(b, cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { _ = e.Stop(context.Background()) })
		es = append(es, e)
	}
	// A sixth of the TTL: the abandoned holding would still be on the key for five sixths of it.
	require.Eventually(t, func() bool { return es[0].IsLeader() || es[1].IsLeader() }, ttl/6, 20*time.Millisecond,
		"a leader well before the abandoned holding (term %d) would have expired", abandoned)
	info, err := b.Leader(t.Context(), role)
	require.NoError(t, err)
	require.NotEqual(t, abandoned, info.Term, "the abandoned term was released, and a new one granted")
}
