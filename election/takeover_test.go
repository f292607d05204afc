package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/internal/lagtest"
)

// takeoverTolerance is how long after a crashed leader's holding ends on the backend a standby may take
// to act: loopback round trips and timers on a loaded machine. A standby that only retried every
// RetryInterval (here the whole TTL) would mostly act far later.
const takeoverTolerance = 200 * time.Millisecond

// crashRounds crashes successive leaders of f three times and checks that a standby acts within
// takeoverTolerance of the moment the crashed holding ends on the backend (left reads how long it still
// has, right after the crash), hence within TTL of the crash. crash ends elector i as a crashed
// process would.
func crashRounds(t *testing.T, f *fleet, w *lagtest.Watch, left func() time.Duration, crash func(i int)) {
	t.Helper()
	l := f.leader(t, 2*testTTL+3*time.Second)
	prev, began := f.nextStart(t, time.Second)
	// late fails a timing check unless the machine ran late by half the tolerance it has: then the
	// takeover's lateness may be the machine's, and the test is inconclusive (lagtest).
	late := func(over time.Duration, format string, args ...any) {
		t.Helper()
		w.ExcuseLate(t, takeoverTolerance/2, over, format, args...)
		t.Fatalf(format, args...)
	}
	for round := range 3 {
		// Fault timing, not synchronisation: crash half a TTL into the leadership, after a renewal,
		// so the holding's end falls between the standbys' periodic retries (which started when they
		// were refused, at the previous holding's end).
		<-time.After(time.Until(began.Add(testTTL/2 + testRenew/4)))
		crashed := time.Now()
		crash(l)
		d := left()
		require.Positive(t, d, "round %d: the crashed leader's holding is still on the backend", round)
		ends := time.Now().Add(d)
		term, at := f.nextStart(t, 2*testTTL+time.Second)
		t.Logf("round %d: new leader %s after the crash, %s after the holding's end", round, at.Sub(crashed), at.Sub(ends))
		require.Greater(t, term, prev)
		if at.Sub(ends) >= takeoverTolerance {
			late(at.Sub(ends)-takeoverTolerance, "round %d: the standby acted %s after the holding ended, not when it ended (tolerance %s)", round, at.Sub(ends), takeoverTolerance)
		}
		if at.Sub(crashed) >= testTTL+takeoverTolerance {
			late(at.Sub(crashed)-testTTL-takeoverTolerance, "round %d: failover %s after the crash, not within TTL + %s", round, at.Sub(crashed), takeoverTolerance)
		}
		// The new leader keeps its place for the next round (a renewal that outlasts OpTimeout on a
		// starved server ends it: fail closed).
		if n := len(leaders(f.es)); n != 1 {
			require.Zero(t, n, "two electors lead at once")
			w.Excuse(t, testOp/3, "round %d: the new leader lost its place: %v", round, f.rec.lossesSoFar())
			t.Fatalf("round %d: the new leader lost its place: %v", round, f.rec.lossesSoFar())
		}
		l, prev, began = f.leader(t, time.Second), term, at
	}
	f.finish(t)
}

// TestRedisCrashedLeaderReplacedAtExpiry: on Redis the holding ends when the leader key expires.
func TestRedisCrashedLeaderReplacedAtExpiry(t *testing.T) {
	t.Parallel()
	env := newRedisEnv(t)
	f := redisFleet(t, env, 4, func(c *Config) { c.RetryInterval = testTTL })
	begin := time.Now()
	f.start(t)
	f.leader(t, 2*testTTL+3*time.Second)
	// The role is new, so the fresh-dataset guard holds everyone off for one TTL; the refused
	// candidates read its end and contend then, not at their next RetryInterval.
	require.Less(t, time.Since(begin), testTTL+takeoverTolerance+100*time.Millisecond, "first leader at the guard's end")
	key := "election:{" + f.es[0].Role() + "}:leader"
	crashRounds(t, f, lagtest.Start(t, redisPing(env.c)), func() time.Duration {
		d, err := env.c.PTTL(t.Context(), key).Result()
		require.NoError(t, err)
		return d
	}, func(i int) { f.cancels[i]() })
}

// TestPostgresCrashedLeaderReplacedAtLeaseUntil: on PostgreSQL a process that dies closes its session,
// which frees the advisory lock at once; the standby that then gets the lock is refused until the
// visible lease_until, and contends again right then.
func TestPostgresCrashedLeaderReplacedAtLeaseUntil(t *testing.T) {
	t.Parallel()
	p := newPGEnv(t)
	f, bs := pgFleet(t, p, 4, func(c *Config) { c.RetryInterval = testTTL })
	f.start(t)
	role := f.es[0].Role()
	crashRounds(t, f, lagtest.Start(t, pgPing(t)), func() time.Duration {
		var ms int64
		err := p.admin.QueryRow(context.Background(), `SELECT (extract(epoch FROM lease_until - now()) * 1000)::bigint
			FROM `+bs[0].Table()+` WHERE role = $1`, role).Scan(&ms)
		require.NoError(t, err)
		return time.Duration(ms) * time.Millisecond
	}, func(i int) {
		f.cancels[i]()
		_ = bs[i].Close() // the process's sockets close with it
	})
}

// frozenClock reads a fixed time; nextAttempt only reads the clock.
type frozenClock struct{ now time.Time }

func (c frozenClock) Now() time.Time                     { return c.now }
func (c frozenClock) NewTimer(time.Duration) clock.Timer { panic("not used") }

func TestNextAttemptSchedulesAtTheHoldingsEnd(t *testing.T) {
	t.Parallel()
	asked := time.Unix(1000, 0)
	cfg := testConfig(t, "r", "me", 1)
	cfg.RetryInterval = testTTL
	cfg.Clock = frozenClock{now: asked.Add(5 * time.Millisecond)} // the answer took 5 ms
	e, err := New(NewRedisBackend(nil, RedisOptions{}), cfg)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		info      LeaderInfo
		err       error
		quick     bool
		want      time.Duration
		wantQuick bool
	}{
		{"held: at the end, counted from the question", LeaderInfo{ID: "x", TTL: 700 * time.Millisecond}, nil, false, 697 * time.Millisecond, false},
		{"held longer than RetryInterval", LeaderInfo{ID: "x", TTL: 5 * time.Second}, nil, false, testTTL, false},
		{"held, nearly over", LeaderInfo{ID: "x", TTL: time.Millisecond}, nil, false, takeoverSlack, false},
		{"held without a TTL", LeaderInfo{ID: "x"}, nil, false, testTTL, false},
		{"guard", LeaderInfo{Guard: 1500 * time.Millisecond}, nil, true, 1497 * time.Millisecond, false},
		{"nobody: once at once", LeaderInfo{}, nil, false, takeoverSlack, true},
		{"nobody again: RetryInterval", LeaderInfo{}, nil, true, testTTL, false},
		{"error", LeaderInfo{ID: "x", TTL: time.Second}, errors.New("timeout"), false, testTTL, false},
	} {
		d, quick := e.nextAttempt(asked, tc.info, tc.err, tc.quick)
		require.Equal(t, tc.want, d, tc.name)
		require.Equal(t, tc.wantQuick, quick, tc.name)
	}
}

func TestLeaderTTLKeepsTheLastMillisecond(t *testing.T) {
	t.Parallel()
	require.Equal(t, time.Millisecond, leaderTTL(0), "PTTL 0: a key in its last millisecond still ends")
	require.Equal(t, 700*time.Millisecond, leaderTTL(700*time.Millisecond))
	require.Zero(t, leaderTTL(-1), "no TTL")
	require.Zero(t, leaderTTL(-2), "gone")
	// What the standby does with it: try again at the expiry, not a RetryInterval later.
	cfg := testConfig(t, "r", "me", 1)
	cfg.RetryInterval = testTTL
	asked := time.Unix(1000, 0)
	cfg.Clock = frozenClock{now: asked.Add(5 * time.Millisecond)}
	e, err := New(NewRedisBackend(nil, RedisOptions{}), cfg)
	require.NoError(t, err)
	d, _ := e.nextAttempt(asked, LeaderInfo{ID: "x", TTL: leaderTTL(0)}, nil, false)
	require.Equal(t, takeoverSlack, d)
}

func TestGuardLeft(t *testing.T) {
	t.Parallel()
	now := time.UnixMicro(5_000_000)
	require.Equal(t, 1500*time.Millisecond, guardLeft("abc 6500000", now))
	require.Zero(t, guardLeft("abc 4000000", now), "over")
	require.Zero(t, guardLeft("", now), "no epoch key")
	require.Zero(t, guardLeft("abc x", now), "malformed")
	require.Zero(t, guardLeft("abc 6500000", time.Time{}), "no server time")
}
