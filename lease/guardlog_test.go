package lease

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

type guardLogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *guardLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *guardLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On a fresh Redis the guard holds every grant back for one TTL: the manager says so once, at INFO,
// with the time it expects grants, however many acquires the guard refuses meanwhile.
func TestFreshDatasetGuardIsLoggedOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	client := newClient(t, srv.Addr())
	eps := endpoints(4)
	addSessions(t, client, eps)
	var buf guardLogBuffer
	cfg := testConfig()
	cfg.InstanceID = "a"
	cfg.Poll = newPollLog(time.Millisecond).pollFunc("a")
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := New(client, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	require.NoError(t, m.Start(ctx))
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = m.Stop(sctx)
	}()
	require.Eventually(t, func() bool { return len(m.Held()) == len(eps) }, 10*cfg.LeaseTTL, 20*time.Millisecond)
	granted := time.Now()
	require.GreaterOrEqual(t, granted.Sub(start), cfg.LeaseTTL/2, "the guard held the first grants back")
	out := buf.String()
	require.Equal(t, 1, strings.Count(out, "fresh dataset"), out)
	require.Contains(t, out, "level=INFO msg=\"lease: holding grants until ")
	require.Contains(t, out, "MarkEstablished")
}
