package election

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A leader that loses its holding because Redis lost it (a restart without persistence, an older
// snapshot) learns so at its next renewal, and contends again at once: its attempt arms the
// fresh-dataset guard within a renewal interval and a call bound of the loss, not a RetryInterval
// later, so that a lone candidate's role is led again a TTL after the fleet could learn of the loss.
func TestRedisLostLeaderContendsAtOnce(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	role := uniqueRole(t)
	b := NewRedisBackend(env.c, RedisOptions{})
	require.NoError(t, b.MarkEstablished(t.Context(), role))
	cfg := testConfig(t, role, "a", 1)
	cfg.RetryInterval = cfg.TTL // a retry a whole TTL away
	e, err := New(b, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	require.Eventually(t, e.IsLeader, 2*testTTL, 10*time.Millisecond)
	// The dataset is lost: the holding and the epoch.
	keys := b.keys(role)
	require.NoError(t, env.c.Del(t.Context(), keys...).Err())
	lost := time.Now()
	require.Eventually(t, func() bool { return env.c.Exists(t.Context(), keys[2]).Val() == 1 }, 3*testTTL, 5*time.Millisecond,
		"the guard is armed again")
	armed := time.Since(lost)
	t.Logf("guard armed %v after the loss", armed)
	require.Less(t, armed, testRenew+testOp+300*time.Millisecond, "within a renewal interval and a call bound, not a RetryInterval later")
}
