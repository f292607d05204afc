package chaos_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/resp"
)

// heldLog collects what a link's observer reports.
type heldLog struct {
	mu  sync.Mutex
	got []chaos.Held
}

func (l *heldLog) observe(h chaos.Held) {
	h.Data = slices.Clone(h.Data) // the link's: kept only as a copy
	l.mu.Lock()
	l.got = append(l.got, h)
	l.mu.Unlock()
}

func (l *heldLog) all() []chaos.Held {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// A hold of requests tells the link's observer of each chunk it delivered late, delivered at least the
// delay after it was read, at its offset in the connection; a chunk it let through on time is not
// reported.
func TestHoldReportsWhatItDeliveredLate(t *testing.T) {
	link, direct := embeddedLink(t)
	ctx := context.Background()
	var log heldLog
	require.True(t, chaos.ObserveHeld(link, log.observe))
	c := linkClient(t, link, 5*time.Second) // its handshake goes through before the hold
	const delay = 300 * time.Millisecond
	require.NoError(t, link.Hold(true, delay, "held-key"))

	require.NoError(t, c.Set(ctx, "free-key", "v", 0).Err(), "a request that does not match goes through")
	require.Empty(t, log.all(), "a chunk delivered on time is not reported")
	sent := time.Now()
	require.NoError(t, c.Set(ctx, "held-key", "v", 0).Err())
	require.GreaterOrEqual(t, time.Since(sent), delay, "the matching request was held")

	// The report may reach the observer just after the request it describes reached Redis (and its
	// reply came back): wait for it.
	require.Eventually(t, func() bool { return len(log.all()) >= 1 }, 5*time.Second, time.Millisecond)
	got := log.all()
	require.Len(t, got, 1)
	h := got[0]
	require.Contains(t, string(h.Data), "held-key")
	require.GreaterOrEqual(t, h.Delivered.Sub(h.Read), delay, "delivered no earlier than its delay after it was read")
	require.False(t, h.Read.Before(sent), "read once sent")
	require.Equal(t, int64(len(resp.AppendCommand(nil, "set", "free-key", "v"))), h.Offset,
		"the offset counts what the hold passed on time before it")
	require.Equal(t, "v", direct.Get(ctx, "held-key").Val())
	require.NoError(t, link.Heal())
}

// What a connection sends behind a held chunk is reported too, with the time it was sent (the hold
// buffers it rather than leave it in the socket), and delivered after the held one.
func TestHoldReportsWhatWaitedBehindIt(t *testing.T) {
	link, direct := embeddedLink(t)
	var log heldLog
	require.True(t, chaos.ObserveHeld(link, log.observe))
	const delay = 400 * time.Millisecond
	require.NoError(t, link.Hold(true, delay, "held-key"))
	conn, err := net.Dial("tcp", link.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	cmds := [][]string{{"SET", "held-key", "1"}, {"SET", "free-a", "1"}, {"SET", "free-b", "1"}, {"SET", "free-c", "1"}}
	var sent []time.Time
	for _, cmd := range cmds {
		sent = append(sent, time.Now())
		_, err := conn.Write(resp.AppendCommand(nil, cmd...))
		require.NoError(t, err)
		time.Sleep(30 * time.Millisecond) // one chunk each
	}
	require.Eventually(t, func() bool { return direct.Exists(context.Background(), "free-c").Val() == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return len(log.all()) >= len(cmds) }, 5*time.Second, time.Millisecond)
	got := log.all()
	require.Len(t, got, len(cmds), "the held chunk and every one queued behind it")
	var off int64
	for i, h := range got {
		require.Contains(t, string(h.Data), cmds[i][1])
		require.Equal(t, off, h.Offset)
		off += int64(len(h.Data))
		require.Equal(t, got[0].Conn, h.Conn)
		// Read when sent, not once the held chunk went a delay later (half the delay leaves a loaded
		// machine room to schedule the read).
		require.Less(t, h.Read.Sub(sent[i]), delay/2, "chunk %d read when sent", i)
		require.GreaterOrEqual(t, h.Delivered.Sub(got[0].Read), delay, "chunk %d delivered behind the held one", i)
	}
	require.NoError(t, link.Heal())
}
