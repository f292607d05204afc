package election

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

func TestDefaultConfigIsValidOnceRoleIsSet(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	require.ErrorIs(t, cfg.Validate(), ErrInvalidConfig)
	cfg.Role = "cron"
	require.NoError(t, cfg.Validate())
}

func TestValidateNamesFieldAndRule(t *testing.T) {
	t.Parallel()
	base := DefaultConfig()
	base.Role = "cron"
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"empty role", func(c *Config) { c.Role = "" }, "Role must not be empty"},
		{"TTL not above renew", func(c *Config) { c.TTL = 5 * time.Second }, "TTL (5s) must be greater than RenewInterval (5s)"},
		{"TTL below renew", func(c *Config) { c.TTL = time.Second }, "TTL (1s) must be greater than RenewInterval (5s)"},
		{"renew at TTL/2", func(c *Config) { c.RenewInterval = 7500 * time.Millisecond }, "RenewInterval (7.5s) must be less than TTL/2 (7.5s)"},
		{"zero TTL", func(c *Config) { c.TTL = 0 }, "TTL (0s) must be positive"},
		{"zero renew", func(c *Config) { c.RenewInterval = 0 }, "RenewInterval (0s) must be positive"},
		{"zero retry", func(c *Config) { c.RetryInterval = 0 }, "RetryInterval (0s) must be positive"},
		{"retry above TTL", func(c *Config) { c.RetryInterval = 16 * time.Second }, "RetryInterval (16s) must not exceed TTL (15s)"},
		{"negative jitter", func(c *Config) { c.StartJitter = -1 }, "StartJitter (-1ns) must not be negative"},
		{"negative handoff", func(c *Config) { c.HandoffTimeout = -1 }, "HandoffTimeout (-1ns) must not be negative"},
		{"drift too large", func(c *Config) { c.DriftBound = 0.5 }, "DriftBound (0.5) must be in [0, 0.5)"},
		{"negative margin", func(c *Config) { c.SafetyMargin = -1 }, "SafetyMargin (-1ns) must not be negative"},
		{"zero op timeout", func(c *Config) { c.OpTimeout = 0 }, "OpTimeout (0s) must be positive"},
		{"op timeout above renew", func(c *Config) { c.OpTimeout = 6 * time.Second }, "OpTimeout (6s) must not exceed RenewInterval (5s)"},
		{"no room to renew", func(c *Config) { c.SafetyMargin = 8 * time.Second }, "TTL*(1-DriftBound)-SafetyMargin (6.85s) must exceed RenewInterval+OpTimeout (7s)"},
		{"nil clock", func(c *Config) { c.Clock = nil }, "Clock must not be nil"},
		{"nil rand", func(c *Config) { c.Rand = nil }, "Rand must not be nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.change(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, ErrInvalidConfig)
			require.Contains(t, err.Error(), tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "election: invalid config: "), err.Error())

			_, err = New(NewRedisBackend(redis.NewClient(&redis.Options{}), RedisOptions{}), cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
			ran, err := RunOnce(context.Background(), NewRedisBackend(redis.NewClient(&redis.Options{}), RedisOptions{}), cfg, nil)
			require.False(t, ran)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

func TestNewRejectsNilBackendAndFillsInstanceID(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "cron", "", 1)
	_, err := New(nil, cfg)
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "backend must not be nil")

	e, err := New(NewRedisBackend(redis.NewClient(&redis.Options{}), RedisOptions{}), cfg)
	require.NoError(t, err)
	require.Regexp(t, `^.+-\d+-[0-9a-f]{8}$`, e.ID())
	require.Equal(t, Follower, e.State())
	require.False(t, e.IsLeader())
	require.ErrorIs(t, e.Stop(context.Background()), ErrNotStarted)
}

func TestStartWithUnreachableRedisFailsClearly(t *testing.T) {
	t.Parallel()
	port, err := redisserver.FreePort() // nothing listens there
	require.NoError(t, err)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + itoa(port), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	e, err := New(NewRedisBackend(c, RedisOptions{}), testConfig(t, "cron", "a", 1))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = e.Start(ctx)
	require.ErrorIs(t, err, ErrBackendUnavailable)
	require.Contains(t, err.Error(), `role "cron"`)
	require.ErrorIs(t, e.Start(context.Background()), ErrAlreadyStarted)
	select {
	case <-e.Done():
	default:
		t.Fatal("a failed Start must leave the elector done")
	}
	require.NoError(t, e.Stop(context.Background()))
}

func itoa(n int) string { return strconv.Itoa(n) }
