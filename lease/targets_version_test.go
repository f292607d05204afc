package lease

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// manualClock is a clock moved by hand; its timers are not used by SessionSource.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(d time.Duration) clock.Timer { return clock.Real{}.NewTimer(d) }

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// setSession writes a session and, when bump is set, increments the change counter after it, as an
// application that owns sessions does.
func setSession(t *testing.T, c redis.UniversalClient, id string, paused, bump bool) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "session:"+id, fmt.Sprintf(`{"id":%q,"paused":%v}`, id, paused), 0).Err())
	if bump {
		require.NoError(t, c.Incr(ctx, SessionVersionKey("")).Err())
	}
}

func targetsOf(t *testing.T, s *SessionSource) []string {
	t.Helper()
	got, err := s.Targets(context.Background())
	require.NoError(t, err)
	return got
}

func (s *SessionSource) fullReads() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full
}

func TestSessionVersionKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, "session-version", SessionVersionKey(""))
	require.Equal(t, "session-version", SessionVersionKey("session:"))
	require.Equal(t, "ns:session-version", SessionVersionKey("ns:session:"))
	require.Equal(t, "s_-version", SessionVersionKey("s_"))
}

// With a counter, a round whose counter has not moved reads nothing more; a change with an increment is
// read at the next round; a change without one waits for the resync.
func TestSessionSourceReadsOnlyOnChange(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := newClient(t, mr.Addr())
	clk := &manualClock{now: time.Unix(1000, 0)}
	src := &SessionSource{Client: c, Clock: clk, ResyncInterval: time.Minute, Logger: quietLogger()}

	setSession(t, c, "a", false, true)
	setSession(t, c, "b", false, true)
	require.Equal(t, []string{"a", "b"}, targetsOf(t, src))
	require.EqualValues(t, 1, src.fullReads())
	for i := 0; i < 5; i++ {
		clk.advance(time.Second)
		require.Equal(t, []string{"a", "b"}, targetsOf(t, src))
	}
	require.EqualValues(t, 1, src.fullReads(), "an unchanged counter reads no session")

	setSession(t, c, "b", true, true) // paused, counted
	require.Equal(t, []string{"a"}, targetsOf(t, src))
	require.EqualValues(t, 2, src.fullReads())

	mr.Del("session:a")
	require.NoError(t, c.Incr(context.Background(), SessionVersionKey("")).Err())
	require.Empty(t, targetsOf(t, src))

	// A writer that forgets to increment: unseen until the resync is due, then read.
	setSession(t, c, "c", false, false)
	clk.advance(30 * time.Second)
	require.Empty(t, targetsOf(t, src))
	full := src.fullReads()
	clk.advance(30 * time.Second)
	require.Equal(t, []string{"c"}, targetsOf(t, src), "the resync bounds a missed increment")
	require.Equal(t, full+1, src.fullReads())

	// The counter key itself is never a session, even under the session prefix.
	src2 := &SessionSource{Client: c, Prefix: "session:", VersionKey: "session:version", Logger: quietLogger()}
	require.NoError(t, c.Incr(context.Background(), "session:version").Err())
	require.Equal(t, []string{"c"}, targetsOf(t, src2))
}

// Without a counter every round reads every session, as before counters existed.
func TestSessionSourceWithoutCounterReadsEveryRound(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := newClient(t, mr.Addr())
	src := &SessionSource{Client: c, Logger: quietLogger()}
	setSession(t, c, "a", false, false)
	for i := 1; i <= 3; i++ {
		require.Equal(t, []string{"a"}, targetsOf(t, src))
		require.EqualValues(t, i, src.fullReads())
	}
	setSession(t, c, "b", false, false)
	require.Equal(t, []string{"a", "b"}, targetsOf(t, src))

	// A counter lost with its data (FLUSHALL) puts the source back to reading every round, so an
	// application that rewrites the sessions and brings the counter back to the value seen before
	// cannot hide the new dataset.
	require.NoError(t, c.Incr(context.Background(), SessionVersionKey("")).Err())
	require.Equal(t, []string{"a", "b"}, targetsOf(t, src))
	full := src.fullReads()
	mr.FlushAll()
	require.Empty(t, targetsOf(t, src))
	setSession(t, c, "z", false, true) // counter back at 1, the value seen before the wipe
	require.Equal(t, []string{"z"}, targetsOf(t, src))
	require.Equal(t, full+2, src.fullReads())
}

func TestSessionSourceValidates(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := newClient(t, mr.Addr())
	_, err := (&SessionSource{Client: c, ResyncInterval: -time.Second}).Targets(context.Background())
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "ResyncInterval")

	cfg := DefaultConfig()
	cfg.Poll = func(context.Context, Poll) error { return nil }
	cfg.SessionResync = time.Second
	err = cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "SessionResync (1s) must be at least DiscoveryInterval (10s)")
	cfg.Targets = StaticTargets{"x"}
	require.NoError(t, cfg.Validate(), "unused with a target source of one's own")
}

// A Redis restart, empty or from an older snapshot, can bring the counter back to a value the source
// has seen, over other sessions: the server's run_id changes at every start, so the source reads
// every session again.
func TestSessionSourceSeesRestartWithSameCounter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		persistence string
	}{{"empty", "none"}, {"snapshot", "rdb"}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := redisserver.Start(redisserver.Options{Persistence: tc.persistence})
			if err != nil {
				if !redistest.Required() {
					t.Skipf("real-Redis test skipped: %v", err)
				}
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			c := newClient(t, srv.Addr())
			ctx := context.Background()
			src := &SessionSource{Client: c, Logger: quietLogger()}

			setSession(t, c, "a", false, true) // counter 1
			if tc.persistence == "rdb" {
				require.NoError(t, srv.Save())
			}
			setSession(t, c, "b", false, true) // counter 2
			require.Equal(t, []string{"a", "b"}, targetsOf(t, src))
			require.Equal(t, []string{"a", "b"}, targetsOf(t, src))
			full := src.fullReads()
			require.EqualValues(t, 1, full)

			if tc.persistence == "rdb" {
				require.NoError(t, srv.Reload()) // session a, counter 1
				require.Equal(t, "1", c.Get(ctx, SessionVersionKey("")).Val())
				setSession(t, c, "x", false, true) // counter 2 again, over {a, x}
				require.Equal(t, []string{"a", "x"}, targetsOf(t, src))
			} else {
				require.NoError(t, srv.Restart())
				setSession(t, c, "x", false, true)
				setSession(t, c, "y", false, true) // counter 2 again, over {x, y}
				require.Equal(t, []string{"x", "y"}, targetsOf(t, src))
			}
			require.Equal(t, full+1, src.fullReads())
		})
	}
}

// A full read spans several MGET batches; values land on their own keys.
func TestSessionSourceReadsManySessions(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	c := newClient(t, mr.Addr())
	var want []string
	for i := 0; i < 3*mgetBatch+7; i++ {
		id := fmt.Sprintf("s%05d", i)
		paused := i%97 == 0
		require.NoError(t, mr.Set("session:"+id, fmt.Sprintf(`{"id":%q,"paused":%v}`, id, paused)))
		if !paused {
			want = append(want, id)
		}
	}
	mr.HSet("session:s00001", "id", "s00001") // not a string key: logged and skipped
	require.Equal(t, "s00001", want[0])
	want = want[1:]
	got := targetsOf(t, &SessionSource{Client: c, Logger: quietLogger()})
	require.Equal(t, want, got)
}

func TestCanonicalSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, id      string
		paused, fast bool
	}{
		{`{"id":"a","paused":false}`, "a", false, true},
		{`{"id":"ep-7","paused":true}`, "ep-7", true, true},
		{`{"id":"a","paused":false} `, "a", false, false},
		{`{"id":"ab","paused":false}`, "a", false, false},
		{`{"id":"a","paused":false,"x":1}`, "a", false, false},
		{`{"paused":false}`, "a", false, false},
		{`{"id":"a\"b","paused":true}`, `a"b`, false, false},
	} {
		paused, ok := canonicalSession(tc.raw, tc.id)
		require.Equal(t, tc.fast, ok, tc.raw)
		if ok {
			require.Equal(t, tc.paused, paused, tc.raw)
			var v sessionValue
			require.NoError(t, json.Unmarshal([]byte(tc.raw), &v))
			require.Equal(t, v.Paused, paused, "the text form agrees with JSON")
			require.Equal(t, tc.id, v.ID)
		}
	}
}
