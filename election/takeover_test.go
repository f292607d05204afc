package election

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRedisCrashedLeaderReplacedAtExpiry crashes successive leaders (they stop renewing and release
// nothing) with RetryInterval as long as the TTL, and checks that a standby leads within a small
// tolerance of the moment the crashed leader's key expires on Redis, hence within TTL of the crash. A
// standby that only retried every RetryInterval would start up to a whole TTL after the expiry.
func TestRedisCrashedLeaderReplacedAtExpiry(t *testing.T) {
	t.Parallel()
	const tolerance = 200 * time.Millisecond // loopback round trips and timers on a loaded machine
	env := newRedisEnv(t)
	f := redisFleet(t, env, 4, func(c *Config) { c.RetryInterval = testTTL })
	begin := time.Now()
	f.start(t)
	l := f.leader(t, 2*testTTL+3*time.Second)
	// The role is new, so the fresh-dataset guard holds everyone off for one TTL; the refused
	// candidates read its end and contend then, not at their next RetryInterval.
	require.Less(t, time.Since(begin), testTTL+tolerance+100*time.Millisecond, "first leader at the guard's end")
	prev, began := f.nextStart(t, time.Second)
	key := "election:{" + f.es[l].Role() + "}:leader"
	for round := range 3 {
		// Fault timing, not synchronisation: crash half a RetryInterval into the leadership, after a
		// renewal, so the key's expiry falls between the standbys' periodic retries (which started
		// when they were refused, at the previous leader's expiry).
		<-time.After(time.Until(began.Add(testTTL/2 + testRenew/4)))
		crashed := time.Now()
		f.cancels[l]() // crash: no release, no more renewals
		pttl, err := env.c.PTTL(t.Context(), key).Result()
		require.NoError(t, err)
		require.Positive(t, pttl, "round %d: the crashed leader's key is still there", round)
		expiry := time.Now().Add(pttl)
		term, at := f.nextStart(t, 2*testTTL+time.Second)
		t.Logf("round %d: new leader %s after the crash, %s after the key's expiry", round, at.Sub(crashed), at.Sub(expiry))
		require.Greater(t, term, prev)
		require.Less(t, at.Sub(expiry), tolerance, "round %d: the standby acts at the key's expiry, not a RetryInterval later", round)
		require.Less(t, at.Sub(crashed), testTTL+tolerance, "round %d: failover within TTL of the crash", round)
		l, prev, began = f.leader(t, time.Second), term, at
	}
	f.finish(t)
}
