package election

import (
	"context"
	"errors"
	"sync/atomic"
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

// lossyRenewals is a Redis backend whose next renewal lands but loses its reply, and whose next release
// is lost on the way (it never reaches Redis): the leader stops leading, and its renewed holding stays
// on the key with nobody acting on it. It sends no release hints (it is not a Notifier), so only the
// elector's own schedule decides when it tries again.
type lossyRenewals struct {
	*RedisBackend
	armed atomic.Bool
	drop  atomic.Bool // the release that follows the loss is still to be dropped
}

// Subscribe shadows the embedded backend's, so that lossyRenewals is not a Notifier.
func (b *lossyRenewals) Subscribe() {}

func (b *lossyRenewals) Renew(ctx context.Context, role, id string, term uint64, ttl time.Duration) error {
	err := b.RedisBackend.Renew(ctx, role, id, term, ttl)
	if err == nil && b.armed.CompareAndSwap(true, false) {
		b.drop.Store(true)
		return errors.New("renewal landed, its reply was lost")
	}
	return err
}

func (b *lossyRenewals) Release(ctx context.Context, role, id string, term uint64) error {
	if b.drop.CompareAndSwap(true, false) {
		return errors.New("release lost on the way")
	}
	return b.RedisBackend.Release(ctx, role, id, term)
}

// Releasing an abandoned term is limited to once per wait, so that a release that frees nothing cannot
// loop; the limit must not outlive the wait. Here the elector first leads by releasing an abandoned
// term, then loses a renewal's reply (the renewal landed) and its release: the backend again holds a
// term of this instance that nothing acts on, and the elector must release it at once, not a
// RetryInterval later (nor leave the role to expire).
func TestRedisSecondAbandonedTermReleasedAtOnce(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	role := uniqueRole(t)
	const ttl = 30 * time.Second
	b := &lossyRenewals{RedisBackend: NewRedisBackend(env.c, RedisOptions{})}
	require.NoError(t, b.MarkEstablished(t.Context(), role))
	abandoned, ok, err := b.TryAcquire(t.Context(), role, "a", ttl)
	require.NoError(t, err)
	require.True(t, ok)

	cfg := testConfig(t, role, "a", 1)
	// A retry interval long against the bound below: the finding costs one.
	cfg.TTL, cfg.RenewInterval, cfg.RetryInterval = ttl, time.Second, 20*time.Second
	e, err := New(b, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	require.Eventually(t, e.IsLeader, ttl/6, 10*time.Millisecond, "the first abandoned term (%d) was released", abandoned)
	first := e.Term()
	require.NotEqual(t, abandoned, first)

	b.armed.Store(true)
	require.Eventually(t, func() bool { return !b.armed.Load() && !b.drop.Load() }, 5*time.Second, 10*time.Millisecond,
		"the renewal whose reply is lost, and the release after it, were sent")
	require.Eventually(t, func() bool { return e.IsLeader() && e.Term() > first }, ttl/6, 10*time.Millisecond,
		"leading again with a new term well before the retry interval (%v) or the renewed term's expiry (%v)", cfg.RetryInterval, ttl)
}
