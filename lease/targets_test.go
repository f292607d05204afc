package lease

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSessionSource(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := newClient(t, mr.Addr())
	var logs syncBuffer
	src := &SessionSource{Client: c, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()

	require.NoError(t, mr.Set("session:a", `{"id":"a","paused":false}`))
	require.NoError(t, mr.Set("session:b", `{"id":"b","paused":true}`))
	require.NoError(t, mr.Set("session:c", `{"paused":false}`)) // id may be omitted
	require.NoError(t, mr.Set("session:bad", `{not json`))
	require.NoError(t, mr.Set("session:other", `{"id":"zzz"}`))
	mr.HSet("session:hash", "id", "hash")
	require.NoError(t, mr.Set("sessionx:d", `{"id":"d"}`)) // another prefix

	for i := 0; i < 3; i++ {
		got, err := src.Targets(ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"a", "c"}, got)
	}
	out := logs.String()
	require.Equal(t, 3, strings.Count(out, "malformed session skipped"), "each malformed session logged once:\n%s", out)
	require.Contains(t, out, "session:bad")
	require.Contains(t, out, "session:other")
	require.Contains(t, out, "session:hash")
	v, err := mr.Get("session:bad")
	require.NoError(t, err)
	require.Equal(t, `{not json`, v, "a malformed session is never deleted or rewritten")

	// A change of the bad value is reported again; a fix makes the session a target.
	require.NoError(t, mr.Set("session:bad", `{still not json`))
	_, err = src.Targets(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(logs.String(), "malformed session skipped"))
	require.NoError(t, mr.Set("session:bad", `{"id":"bad"}`))
	mr.Del("session:a")
	got, err := src.Targets(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"bad", "c"}, got)
}

func TestStaticTargets(t *testing.T) {
	t.Parallel()
	s := StaticTargets{"x", "y"}
	got, err := s.Targets(context.Background())
	require.NoError(t, err)
	got[0] = "changed"
	require.Equal(t, StaticTargets{"x", "y"}, s)
}
