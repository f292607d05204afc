package sim

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// heldFor is how long the tests' link holds a PEXPIRE: past the 200 ms the first call waits for it,
// within the 3 s the second one does.
const heldFor = 400 * time.Millisecond

// landedSlack bounds how much later than heldFor after its call a held command may be seen to land.
// The lower bound is exact: the hold delivers a chunk no earlier than heldFor after the link read it,
// and the link reads it after the call was recorded (both on the same monotonic clock). Above it come
// the client's write and the link's read (microseconds), the hold's timer firing late and its
// goroutine being scheduled: a few ms on an idle machine, tens when another job loads both CPUs.
const landedSlack = 75 * time.Millisecond

// heldLink is an embedded link to a fresh Redis, its held requests reported to a landings of rec as
// instance i0's.
func heldLink(t *testing.T) (chaos.Link, *history.Recorder, *landings) {
	t.Helper()
	srv := redistest.Start(t)
	proxies := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = proxies.Close() })
	link, err := proxies.NewLink("i0", srv.Addr())
	require.NoError(t, err)
	start := time.Now()
	rec := history.NewRecorderFrom(start)
	l := newLandings(rec, start)
	l.observe(link, "i0")
	return link, rec, l
}

// awaitLandings waits until n commands were reported landed.
func awaitLandings(t *testing.T, l *landings, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.got) >= n
	}, 10*time.Second, 5*time.Millisecond, "%d held commands must land", n)
}

// checkLanded checks the history of the tests below: an unheld SET without Landed, then the same
// PEXPIRE twice, held: first given up on (unknown) and landed later, then answered after it landed.
func checkLanded(t *testing.T, rec *history.Recorder) {
	t.Helper()
	var pexpires []history.Event
	for _, e := range rec.Events() {
		require.NotNil(t, e.Op)
		if e.Op.Kind != history.OpRenew {
			require.Zero(t, e.Op.Landed, "%s was not held", e.Op.Command)
			continue
		}
		require.Equal(t, "pexpire poll:lease:ep-0 5000", lower(e.Op.Command))
		pexpires = append(pexpires, e)
	}
	require.Len(t, pexpires, 2)
	for _, e := range pexpires {
		t.Logf("%s sent at %v, landed %v later", e.Op.Command, e.At, e.Op.Landed-e.At)
		require.GreaterOrEqual(t, e.Op.Landed-e.At, heldFor, "landed no earlier than held for: %+v", e.Op)
		require.LessOrEqual(t, e.Op.Landed-e.At, heldFor+landedSlack, "landed when its hold ended: %+v", e.Op)
	}
	gaveUp, answered := pexpires[0], pexpires[1]
	require.True(t, gaveUp.Op.Unknown)
	require.Equal(t, history.Infinity, gaveUp.End)
	require.Greater(t, gaveUp.Op.Landed, gaveUp.Op.GaveUp, "it landed after its caller gave up")
	require.False(t, answered.Op.Unknown)
	require.True(t, answered.Op.OK)
	require.LessOrEqual(t, answered.Op.Landed, answered.End, "answered once it landed")
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// An in-process instance's PEXPIRE held on its link past its call's timeout is recorded unknown (the
// go-redis hook), and lands 400 ms after it was sent; the same command sent again lands, then is
// answered.
func TestHeldCommandLandsInTheHookHistory(t *testing.T) {
	t.Parallel()
	link, rec, l := heldLink(t)
	c := redis.NewClient(&redis.Options{Addr: link.Addr(), ReadTimeout: 3 * time.Second, ContextTimeoutEnabled: true, MaxRetries: 3})
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(&recordingHook{instance: "i0", rec: rec, defaults: defaultClassifier{leasePrefix: "poll:lease:"}})
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "poll:lease:ep-0", "i0", 5*time.Second).Err())
	require.NoError(t, link.Hold(true, heldFor, "pexpire"))

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	require.Error(t, c.PExpire(short, "poll:lease:ep-0", 5*time.Second).Err(), "the call gives up before it lands")
	cancel()
	awaitLandings(t, l, 1)
	require.NoError(t, c.PExpire(ctx, "poll:lease:ep-0", 5*time.Second).Err())
	awaitLandings(t, l, 2)
	require.Equal(t, 2, l.resolve())
	checkLanded(t, rec)
}

// A process instance's PEXPIRE held on its link past the 200 ms it waits before closing the connection
// is recorded unknown (the wire recorder, on the client side of the link), and lands 400 ms after it
// was sent; the same command sent again on another connection lands, then is answered.
func TestHeldCommandLandsInTheWireHistory(t *testing.T) {
	t.Parallel()
	link, rec, l := heldLink(t)
	w, err := NewWireRecorder(WireConfig{Recorder: rec, Instance: "i0", Upstream: link.Addr(), KeyPrefix: "poll:"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:ep-0 i0 PX 5000")
	c.recv(1)
	require.NoError(t, link.Hold(true, heldFor, "pexpire"))

	c.send("PEXPIRE poll:lease:ep-0 5000")
	time.Sleep(200 * time.Millisecond) // the instance's call timeout
	require.NoError(t, c.conn.Close())
	awaitLandings(t, l, 1)
	c2 := dialRaw(t, w.Addr())
	c2.send("PEXPIRE poll:lease:ep-0 5000")
	require.Equal(t, int64(1), c2.recv(1)[0].Int)
	awaitLandings(t, l, 2)
	require.NoError(t, w.Close())
	require.Equal(t, 2, l.resolve())
	checkLanded(t, rec)
}

// A landing goes to the latest operation of the instance with the same command that was called before
// the link read it and not over long before (answered, or given up on), each operation once; a landing
// left over once they are all matched is a re-send (go-redis's, within one call), whose operation keeps
// its last landing.
func TestLandingsMatchTheOperationThatSentThem(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	start := time.Now()
	rec := history.NewRecorderFrom(start)
	add := func(inst string, at, end, gaveUp time.Duration, cmd string) int64 {
		op := &history.Op{Kind: history.OpRenew, Command: cmd, OK: true}
		if end == history.Infinity {
			op.OK, op.Unknown, op.GaveUp = false, true, gaveUp
		}
		return rec.Add(history.Event{Kind: history.KindOp, At: at, End: end, Instance: inst, Op: op})
	}
	old := add("i0", ms(0), history.Infinity, ms(200), "pexpire k 5000")       // given up on long before
	answered := add("i0", ms(1000), ms(1010), 0, "pexpire k 5000")             // answered long before
	held := add("i0", ms(2000), history.Infinity, ms(2200), "pexpire k 5000")  // the first sent
	other := add("i1", ms(2000), history.Infinity, ms(2200), "pexpire k 5000") // another instance's
	resent := add("i0", ms(2100), history.Infinity, ms(2300), "pexpire k 5000")
	l := newLandings(rec, start)
	l.got = []landing{
		{instance: "i0", command: "pexpire k 5000", read: ms(2101), landed: ms(2501)},
		{instance: "i0", command: "pexpire k 5000", read: ms(2001), landed: ms(2401)},
		{instance: "i0", command: "pexpire k 5000", read: ms(2102), landed: ms(2502)}, // a re-send
		{instance: "i0", command: "pexpire k 5000", read: ms(2600), landed: ms(3000)}, // after every call was over
		{instance: "i0", command: "pexpire k 9999", read: ms(2001), landed: ms(2401)}, // sent by nobody
	}
	require.Equal(t, 2, l.resolve())
	landed := map[int64]time.Duration{}
	for _, e := range rec.Events() {
		landed[e.Seq] = e.Op.Landed
	}
	require.Equal(t, map[int64]time.Duration{old: 0, answered: 0, held: ms(2401), other: 0, resent: ms(2502)}, landed)
}
