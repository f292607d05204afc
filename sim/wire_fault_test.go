package sim

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// A connection that closes with commands outstanding leaves its batch unknown, the answered commands
// of the batch included (the client failed the whole pipeline); a batch already complete keeps its
// outcomes; Close does the same to every connection still open before it returns.
func TestWireRecorderLostReplies(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:a me NX PX 1000")
	c.recv(1)
	c.send("PEXPIRE poll:lease:a 5000", "BLPOP poll:empty 10")
	require.Equal(t, int64(1), c.recv(1)[0].Int, "PEXPIRE answered (so the recorder read it); BLPOP blocks")
	require.NoError(t, c.conn.Close())

	// What a client keeps of a failed pipeline: the errors and nulls it was answered.
	c3 := dialRaw(t, w.Addr())
	c3.send("GET poll:lease:none", "INCR poll:lease:a", "BLPOP poll:empty 10")
	c3.recv(2)
	require.NoError(t, c3.conn.Close())
	require.Eventually(t, func() bool { return len(rec.Events()) == 6 }, 5*time.Second, time.Millisecond,
		"both closed connections recorded")

	c2 := dialRaw(t, w.Addr())
	c2.send("GET poll:lease:a", "BLPOP poll:empty 10")
	c2.recv(1)
	require.NoError(t, w.Close(), "Close ends the connection still waiting")
	require.ElementsMatch(t, []string{
		"SET poll:lease:a me NX PX 1000 => acquire ok",
		"PEXPIRE poll:lease:a 5000 => renew unknown",
		"BLPOP poll:empty 10 => other unknown",
		"GET poll:lease:none => read ok",
		"INCR poll:lease:a => other err ERR value",
		"BLPOP poll:empty 10 => other unknown",
		"GET poll:lease:a => read unknown",
		"BLPOP poll:empty 10 => other unknown",
	}, summary(rec))
	for _, e := range rec.Events() {
		require.Equal(t, e.Op.Unknown, e.End == history.Infinity)
	}
}

// fakeServer answers every connection with the bytes of answer, whatever it is sent.
func fakeServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				if _, err := conn.Read(buf); err != nil {
					return
				}
				_, _ = conn.Write([]byte(answer))
				_, _ = conn.Read(buf) // until the client goes
			}()
		}
	}()
	return ln.Addr().String()
}

// A server stream the recorder cannot read is still passed on unchanged; what it cannot match is
// recorded unknown, and Err says what happened.
func TestWireRecorderUnreadableReplies(t *testing.T) {
	t.Parallel()
	garbage := "+OK\r\n@what\r\n"
	w, rec := newWire(t, fakeServer(t, garbage), nil)
	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:a me NX PX 1000", "GET poll:lease:a")
	got := make([]byte, len(garbage))
	require.NoError(t, c.conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := readFull(c.conn, got)
	require.NoError(t, err)
	require.Equal(t, garbage, string(got), "forwarded byte for byte")
	c.send("DEL poll:lease:a")
	require.Eventually(t, func() bool { return len(rec.Events()) == 3 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{
		"SET poll:lease:a me NX PX 1000 => acquire unknown",
		"GET poll:lease:a => read unknown",
		"DEL poll:lease:a => release unknown",
	}, summary(rec))
	require.ErrorContains(t, w.Err(), "the server sent what is not RESP")
	require.ErrorContains(t, w.Err(), "no RESP type starts with '@'")
}

func readFull(conn net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := conn.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// A client that sends what is not a Redis command is reported, naming the instance; the commands it
// sent before are recorded as usual.
func TestWireRecorderMalformedRequests(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:a me NX PX 1000")
	c.recv(1)
	_, err := c.conn.Write([]byte("*1\r\n:1\r\n"))
	require.NoError(t, err)
	require.True(t, c.recv(1)[0].IsError(), "Redis's own protocol error, passed on")
	require.ErrorContains(t, w.Err(), "recorder of i0")
	require.ErrorContains(t, w.Err(), "not a Redis command")
	require.Equal(t, []string{"SET poll:lease:a me NX PX 1000 => acquire ok"}, summary(rec))
}

// A connection that opens with a Redis Cluster bus message is another process's (a cluster node
// dialling a peer's old port, which the recorder's listener was given since): it is closed unforwarded
// and noted, not taken for an instance that does not speak Redis; the instance's own connections go on.
func TestWireRecorderClosesAStrayClusterBusConnection(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	stray, err := net.Dial("tcp", w.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = stray.Close() })
	msg := append([]byte("RCmb"), make([]byte, 2252)...) // a bus message's signature, then its header
	_, err = stray.Write(msg)
	require.NoError(t, err)
	require.NoError(t, stray.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = stray.Read(make([]byte, 16))
	require.Error(t, err, "the stray connection must be closed, with nothing sent back")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed, not left open: %v", err)

	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:a me NX PX 1000")
	c.recv(1)
	require.NoError(t, w.Err())
	require.Equal(t, []string{"SET poll:lease:a me NX PX 1000 => acquire ok"}, summary(rec))
	var notes []string
	for _, e := range rec.Events() {
		if e.Kind == history.KindNote {
			notes = append(notes, e.Note)
		}
	}
	require.Len(t, notes, 1)
	require.Contains(t, notes[0], "Redis Cluster bus message")
}

// An upstream that refuses (a cut link) is passed on as a reset connection; nothing is recorded.
func TestWireRecorderUpstreamRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	w, rec := newWire(t, addr, nil)
	conn, err := net.Dial("tcp", w.Addr())
	if err == nil { // the reset may come before the dial returns, or after
		t.Cleanup(func() { _ = conn.Close() })
		_, _ = conn.Write([]byte("PING\r\n"))
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err = conn.Read(make([]byte, 16))
	}
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed, not left hanging")
	require.NoError(t, w.Close())
	require.Empty(t, rec.Events())
}

// Commands a dead instance still sends are passed on but not recorded.
func TestWireRecorderIgnoresTheDead(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var dead atomic.Bool
	rec := history.NewRecorderFrom(time.Now())
	w, err := NewWireRecorder(WireConfig{Recorder: rec, Instance: "i0", Upstream: srv.Addr(), KeyPrefix: "poll:", Dead: dead.Load})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:a me NX PX 1000")
	c.recv(1)
	dead.Store(true)
	c.send("DEL poll:lease:a")
	require.Equal(t, int64(1), c.recv(1)[0].Int, "passed on")
	require.NoError(t, w.Close())
	require.Equal(t, []string{"SET poll:lease:a me NX PX 1000 => acquire ok"}, summary(rec))
}

func TestNewWireRecorderNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	rec := history.NewRecorderFrom(time.Now())
	for _, tc := range []struct {
		cfg WireConfig
		msg string
	}{
		{WireConfig{Instance: "i0", Upstream: "x"}, "no history.Recorder"},
		{WireConfig{Recorder: rec, Upstream: "x"}, "no instance ID"},
		{WireConfig{Recorder: rec, Instance: "i0"}, "no upstream address"},
	} {
		_, err := NewWireRecorder(tc.cfg)
		require.ErrorContains(t, err, tc.msg)
	}
}
