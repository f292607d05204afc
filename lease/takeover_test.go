package lease

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
)

// A crashed holder's endpoints are polled by survivors within about one TTL of the crash even when the
// discovery interval is far longer: the survivors act on the expiries they read, not on their ticks.
func TestCrashTakeoverAtExpiry(t *testing.T) {
	f, _, eps := realFleet(t, 9)
	cfg := testConfig()
	cfg.LeaseTTL, cfg.HeartbeatTTL = 2*time.Second, 2*time.Second
	cfg.RenewInterval, cfg.HeartbeatInterval = time.Second, 500*time.Millisecond
	cfg.DiscoveryInterval = time.Minute // a takeover that waited for a tick would fail the test
	cfg.OpTimeout = 300 * time.Millisecond
	f.cfg = cfg
	for _, id := range []string{"a", "b", "c"} {
		f.start(id)
	}
	require.Eventually(t, func() bool { return f.settled(eps, 3, 3) }, settle, 20*time.Millisecond)
	victim := f.members["c"].m.Held()
	f.crash("c")
	crashed := time.Now()
	require.Eventually(t, func() bool { return f.settled(eps, 4, 5) }, settle, 20*time.Millisecond,
		"survivors take over without a discovery tick")
	firstPoll := func(ep string) time.Time {
		var first time.Time
		for _, p := range f.log.pollsOf(ep) {
			if p.instance != "c" && p.start.After(crashed) && (first.IsZero() || p.start.Before(first)) {
				first = p.start
			}
		}
		return first
	}
	for _, ep := range victim {
		require.Eventually(t, func() bool { return !firstPoll(ep).IsZero() }, settle, 10*time.Millisecond,
			"%s polled by a survivor", ep)
		took := firstPoll(ep).Sub(crashed)
		t.Logf("%s taken over %s after the crash", ep, took)
		// Its last renewal came at most one RenewInterval (and a round trip) before the crash, so the
		// lease cannot have expired earlier than this; a generous allowance above the TTL covers a
		// loaded machine, and is still far below the discovery interval.
		require.GreaterOrEqual(t, took, cfg.LeaseTTL-cfg.RenewInterval-100*time.Millisecond, "%s taken before its lease could expire", ep)
		require.Less(t, took, cfg.LeaseTTL+time.Second, "%s taken over late", ep)
	}
}

func TestFirstExpiry(t *testing.T) {
	sent := time.Unix(100, 0)
	cmd := func(d time.Duration) *redis.DurationCmd {
		c := redis.NewDurationCmd(nil, time.Millisecond)
		c.SetVal(d)
		return c
	}
	_, ok := firstExpiry(sent, nil)
	require.False(t, ok, "nothing read, nothing scheduled")
	_, ok = firstExpiry(sent, []*redis.DurationCmd{cmd(-1)})
	require.False(t, ok, "a key without a TTL is not waited for")
	at, ok := firstExpiry(sent, []*redis.DurationCmd{cmd(900 * time.Millisecond), cmd(300 * time.Millisecond), cmd(-1)})
	require.True(t, ok)
	require.Equal(t, sent.Add(300*time.Millisecond), at, "the first expiry")
	at, ok = firstExpiry(sent, []*redis.DurationCmd{cmd(300 * time.Millisecond), cmd(-2)})
	require.True(t, ok)
	require.Equal(t, sent, at, "a key already gone is due at once")
}

func TestAlarmFiresAtTheEarliestArmedTime(t *testing.T) {
	kick := make(chan struct{}, 1)
	a := newAlarm(clock.Real{}, kick)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { a.run(done); close(stopped) }()
	defer func() { close(done); <-stopped }()

	start := time.Now()
	a.arm(start.Add(time.Hour))
	a.arm(start.Add(50 * time.Millisecond))
	a.arm(start.Add(2 * time.Hour)) // later: changes nothing
	select {
	case <-kick:
	case <-time.After(10 * time.Second):
		t.Fatal("the alarm did not fire")
	}
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "fired early")
	require.Eventually(t, func() bool { return a.pending().IsZero() }, 5*time.Second, time.Millisecond, "disarmed once fired")

	a.set(time.Now().Add(time.Hour))
	a.set(time.Time{}) // disarm
	require.True(t, a.pending().IsZero())
	a.set(time.Now().Add(20 * time.Millisecond))
	select {
	case <-kick:
	case <-time.After(10 * time.Second):
		t.Fatal("the alarm set after a disarm did not fire")
	}
}
