package redisserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

func TestLifecycle(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, "v", c.Get(ctx, "k").Val())

	// Paused: the server holds the connection but answers nothing until resumed.
	require.NoError(t, s.Pause())
	require.Error(t, c.Ping(ctx).Err(), "a paused server must not answer")
	require.NoError(t, s.Resume())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)

	// Restart: same port, empty dataset.
	port := s.Port()
	require.NoError(t, s.Restart())
	require.Equal(t, port, s.Port())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, int64(0), c.Exists(ctx, "k").Val(), "a restarted server must come back empty")

	// Kill: nothing answers; Start brings it back.
	require.NoError(t, s.Kill())
	require.False(t, s.Running())
	require.Error(t, c.Ping(ctx).Err())
	require.NoError(t, s.Start())
	require.True(t, s.Running())
	require.Eventually(t, func() bool { return c.Ping(ctx).Err() == nil }, 5*time.Second, 20*time.Millisecond)

	require.NoError(t, s.Close())
	require.False(t, s.Running())
	require.NoError(t, s.Close(), "Close is idempotent")
}

func TestTwoServersGetDistinctPorts(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	require.NotEqual(t, a.Port(), b.Port())
}

func startWith(t *testing.T, persistence string) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start(redisserver.Options{Persistence: persistence})
	if errors.Is(err, redisserver.ErrNoBinary) && !redistest.Required() {
		t.Skipf("real-Redis test skipped: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.Equal(t, persistence, s.Persistence())
	return s
}

func client(t *testing.T, s *redisserver.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func up(t *testing.T, c *redis.Client) {
	require.Eventually(t, func() bool { return c.Ping(context.Background()).Err() == nil }, 10*time.Second, 20*time.Millisecond)
}

// An RDB server reloads its last snapshot: what was written after the SAVE is lost, keys whose TTL ran
// out meanwhile are gone, and an empty restart loads nothing.
func TestRDBReloadLoadsTheSnapshot(t *testing.T) {
	s := startWith(t, redisserver.PersistRDB)
	c := client(t, s)
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	require.NoError(t, c.Set(ctx, "short", "1", 200*time.Millisecond).Err())
	require.NoError(t, s.Save())
	require.NoError(t, c.Set(ctx, "after", "1", 0).Err())
	require.Eventually(t, func() bool { return c.Exists(ctx, "short").Val() == 0 }, 5*time.Second, 20*time.Millisecond)

	require.NoError(t, s.Reload())
	up(t, c)
	require.Equal(t, "1", c.Get(ctx, "before").Val(), "the snapshot's keys come back")
	require.Equal(t, int64(0), c.Exists(ctx, "after").Val(), "a write after the SAVE is lost")
	require.Equal(t, int64(0), c.Exists(ctx, "short").Val(), "a key whose TTL ran out does not come back")

	require.NoError(t, s.Restart())
	up(t, c)
	require.Equal(t, int64(0), c.DBSize(ctx).Val(), "Restart is empty whatever the files held")
}

// An AOF server reloads every write a kill -9 left in the file.
func TestAOFReloadLoadsTheLog(t *testing.T) {
	s := startWith(t, redisserver.PersistAOF)
	c := client(t, s)
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "k", "v", time.Minute).Err())
	// everysec may postpone the write to the file while an fsync is running: wait until it is there.
	require.Eventually(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(s.Dir(), "appendonlydir", "*.incr.aof"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), "\r\nk\r\n") {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the AOF must hold the write")
	require.NoError(t, s.Reload())
	up(t, c)
	require.Equal(t, "v", c.Get(ctx, "k").Val())
	require.Greater(t, c.PTTL(ctx, "k").Val(), time.Duration(0), "the TTL survives")

	require.NoError(t, s.Restart())
	up(t, c)
	require.Equal(t, int64(0), c.DBSize(ctx).Val(), "Restart is empty whatever the files held")
}

func TestUnknownPersistenceNamesTheValidOnes(t *testing.T) {
	_, err := redisserver.Start(redisserver.Options{Persistence: "fsync"})
	require.ErrorContains(t, err, `unknown persistence "fsync" (valid: none, rdb, aof)`)
}

// A relative TMPDIR gives a relative temporary directory; redis-server changes into its --dir before it
// opens its log file there, so the server must be given absolute paths.
func TestRelativeTMPDIR(t *testing.T) {
	if _, ok := redisserver.Available(); !ok && !redistest.Required() {
		t.Skip("real-Redis test skipped: no redis-server (set TENURE_REQUIRE_REDIS=1 to make this a failure)")
	}
	t.Chdir(t.TempDir())
	require.NoError(t, os.Mkdir("tmp", 0o755))
	t.Setenv("TMPDIR", "tmp")
	s, err := redisserver.Start(redisserver.Options{Persistence: redisserver.PersistRDB})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.True(t, filepath.IsAbs(s.Dir()), s.Dir())
	c := client(t, s)
	up(t, c)
	require.NoError(t, s.Save())
	require.FileExists(t, filepath.Join(s.Dir(), "dump.rdb"))
}
