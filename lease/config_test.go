package lease

import (
	"context"
	"errors"
	"math/rand"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func validConfig() Config {
	c := DefaultConfig()
	c.Poll = func(context.Context, Poll) error { return nil }
	return c
}

func TestDefaultConfigIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, validConfig().Validate())
	require.NoError(t, testConfigWithPoll().Validate())
	c := DefaultConfig()
	require.Equal(t, 30*time.Second, c.LeaseTTL)
	require.Equal(t, 10*time.Second, c.RenewInterval)
	require.Equal(t, 10*time.Second, c.HeartbeatInterval)
	require.Equal(t, 30*time.Second, c.HeartbeatTTL)
	require.Equal(t, 10*time.Second, c.DiscoveryInterval)
}

func testConfigWithPoll() Config {
	c := testConfig()
	c.Poll = validConfig().Poll
	return c
}

func TestValidateNamesFieldAndRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"space in ID", func(c *Config) { c.InstanceID = "a b" }, "InstanceID .*white space"},
		{"empty prefix", func(c *Config) { c.KeyPrefix = "" }, "KeyPrefix must not be empty"},
		{"no session prefix", func(c *Config) { c.SessionPrefix = "" }, "SessionPrefix"},
		{"zero TTL", func(c *Config) { c.LeaseTTL = 0 }, "LeaseTTL .*at least 1ms"},
		{"renew too slow", func(c *Config) { c.RenewInterval = 20 * time.Second }, `RenewInterval \(20s\) must be at most LeaseTTL/2 \(15s\)`},
		{"heartbeat TTL", func(c *Config) { c.HeartbeatTTL = c.HeartbeatInterval }, "HeartbeatTTL .*more than HeartbeatInterval"},
		{"discovery", func(c *Config) { c.DiscoveryInterval = 0 }, "DiscoveryInterval .*positive"},
		{"poll interval", func(c *Config) { c.PollInterval = -1 }, "PollInterval .*positive"},
		{"op timeout", func(c *Config) { c.OpTimeout = 10 * time.Second }, `OpTimeout \(10s\) must be less than RenewInterval`},
		{"drift", func(c *Config) { c.DriftBound = 0.6 }, `DriftBound \(0.6\) must be in \[0, 0.5\)`},
		{"negative margin", func(c *Config) { c.SafetyMargin = -time.Second }, "SafetyMargin .*negative"},
		{"margin eats validity", func(c *Config) { c.SafetyMargin = 18 * time.Second }, "SafetyMargin leaves a validity"},
		{"no poll", func(c *Config) { c.Poll = nil }, "Poll must be set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(&c)
			err := c.Validate()
			require.Error(t, err)
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.Regexp(t, tc.want, err.Error())
			_, err = New(newClient(t, "127.0.0.1:1"), c)
			require.ErrorIs(t, err, ErrInvalidConfig, "New must validate")
		})
	}
	_, err := New(nil, validConfig())
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestNewInstanceID(t *testing.T) {
	t.Parallel()
	boot := time.Unix(1700000000, 123)
	a := NewInstanceID("web 1", boot, rand.New(rand.NewSource(1)))
	require.Regexp(t, regexp.MustCompile(`^web_1-1700000000000000123-[0-9a-f]{8}$`), a)
	b := NewInstanceID("web 1", boot, rand.New(rand.NewSource(2)))
	require.NotEqual(t, a, b, "the random suffix tells apart two boots in the same nanosecond")
	require.Equal(t, a, NewInstanceID("web 1", boot, rand.New(rand.NewSource(1))), "seeded: reproducible")
}

func TestNewDefaultsInstanceID(t *testing.T) {
	t.Parallel()
	m, err := New(newClient(t, "127.0.0.1:1"), validConfig())
	require.NoError(t, err)
	require.Regexp(t, `^.+-\d+-[0-9a-f]{8}$`, m.ID())
}

func TestStartUnreachableRedis(t *testing.T) {
	t.Parallel()
	c := validConfig()
	c.OpTimeout = 300 * time.Millisecond
	c.Logger = quietLogger()
	reg := prometheus.NewRegistry()
	c.Registerer = reg
	m, err := New(newClient(t, "127.0.0.1:1"), c) // nothing listens on port 1
	require.NoError(t, err)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = m.Start(ctx) // retries until ctx ends
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second)
	require.Less(t, time.Since(start), 10*time.Second)
	require.GreaterOrEqual(t, gauge(t, reg, "tenure_lease_start_retries_total", ""), 1.0, "retries are counted")
	require.ErrorIs(t, m.Stop(context.Background()), ErrNotRunning)
	require.True(t, errors.Is(m.Start(context.Background()), ErrAlreadyStarted))
}
