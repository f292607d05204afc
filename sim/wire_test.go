package sim

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/internal/resp"
)

// newWire starts a recorder in front of upstream, recording for instance "i0".
func newWire(t *testing.T, upstream string, c OpClassifier) (*WireRecorder, *history.Recorder) {
	t.Helper()
	rec := history.NewRecorderFrom(time.Now())
	w, err := NewWireRecorder(WireConfig{Recorder: rec, Instance: "i0", Upstream: upstream, Classifier: c, KeyPrefix: "poll:"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w, rec
}

// rawClient speaks RESP through a recorder byte by byte, as a client in any language would.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	rd   *resp.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawClient{t: t, conn: conn, rd: resp.NewReader(resp.Limits{})}
}

// send writes commands in one write: a pipeline.
func (c *rawClient) send(cmds ...string) {
	var b []byte
	for _, cmd := range cmds {
		b = resp.AppendCommand(b, strings.Fields(cmd)...)
	}
	_, err := c.conn.Write(b)
	require.NoError(c.t, err)
}

// recv reads n messages (replies and pushes alike).
func (c *rawClient) recv(n int) []resp.Value {
	c.t.Helper()
	var out []resp.Value
	buf := make([]byte, 4096)
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	for len(out) < n {
		v, ok, err := c.rd.Next()
		require.NoError(c.t, err)
		if ok {
			out = append(out, v)
			continue
		}
		k, err := c.conn.Read(buf)
		require.NoError(c.t, err, "after %d of %d messages", len(out), n)
		c.rd.Feed(buf[:k])
	}
	return out
}

// summary renders the recorded operations compactly: command, kind, then ok, unknown or the error's
// first words.
func summary(rec *history.Recorder) []string {
	var out []string
	for _, e := range rec.Events() {
		op := e.Op
		if op == nil {
			continue // a note
		}
		s := op.Command + " => " + string(op.Kind)
		switch {
		case op.Unknown:
			s += " unknown"
		case op.Err != "":
			s += " err " + strings.Join(strings.Fields(op.Err)[:min(2, len(strings.Fields(op.Err)))], " ")
		case op.OK:
			s += " ok"
		}
		if op.Value != "" {
			s += " value " + op.Value
		}
		if op.NotReplicated {
			s += " not-replicated"
		}
		out = append(out, s)
	}
	return out
}

// A RESP3 connection: HELLO 3 switches the protocol, a pipeline's replies are matched in order, and
// pushes (a subscription's confirmation and its messages) are not taken for replies.
func TestWireRecorderRESP3PipelinesAndPushes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	c := dialRaw(t, w.Addr())
	c.send("HELLO 3")
	require.Equal(t, resp.Map, c.recv(1)[0].Kind)
	c.send("SUBSCRIBE news")
	require.Equal(t, resp.Push, c.recv(1)[0].Kind)

	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Publish(context.Background(), "news", "hello").Err())
	c.send("SET poll:lease:a me NX PX 1000", "GET poll:lease:a", "PING", "GET poll:lease:none", "PEXPIRE poll:lease:a 2000", "DEL poll:lease:a")
	msgs := c.recv(7) // the published message, then six replies
	require.Equal(t, resp.Push, msgs[0].Kind)
	require.Equal(t, "hello", msgs[0].Elems[2].Str)
	require.Equal(t, resp.Null, msgs[4].Kind)
	require.Equal(t, []string{
		"SET poll:lease:a me NX PX 1000 => acquire ok",
		"GET poll:lease:a => read ok value me",
		"PING => other", // a probe is recorded: its answer tells the instance its link is there
		"GET poll:lease:none => read ok",
		"PEXPIRE poll:lease:a 2000 => renew ok",
		"DEL poll:lease:a => release ok",
	}, summary(rec))
	require.NoError(t, w.Err())
}

// A RESP2 connection in subscribe mode: confirmations and messages are arrays like any reply, and are
// told apart from the replies to the commands allowed (or refused) meanwhile.
func TestWireRecorderRESP2SubscribeMode(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	c := dialRaw(t, w.Addr())
	c.send("SUBSCRIBE a b")
	require.Len(t, c.recv(2), 2)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Publish(context.Background(), "a", "message").Err())
	c.send("PING", "GET poll:lease:a")
	msgs := c.recv(3)
	require.Equal(t, "message", msgs[0].Elems[0].Str)
	require.Equal(t, "pong", msgs[1].Elems[0].Str, "PING answers with an array in RESP2 subscribe mode")
	require.True(t, msgs[2].IsError())
	c.send("UNSUBSCRIBE", "SET poll:lease:a me NX PX 1000")
	require.Len(t, c.recv(3), 3)
	require.Equal(t, []string{
		"PING => other",
		"GET poll:lease:a => other err ERR Can't",
		"SET poll:lease:a me NX PX 1000 => acquire ok",
	}, summary(rec))
	require.NoError(t, w.Err())
}

// Inline commands are commands; a client that turns replies off leaves its commands unknown.
func TestWireRecorderInlineAndClientReply(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	c := dialRaw(t, w.Addr())
	_, err := c.conn.Write([]byte("SET poll:lease:a \"me\" NX PX 1000\r\n\r\nGET poll:lease:a\n"))
	require.NoError(t, err)
	require.Len(t, c.recv(2), 2)
	c.send("CLIENT REPLY OFF", "SET poll:lease:b me NX PX 1000", "CLIENT REPLY ON", "GET poll:lease:b")
	msgs := c.recv(2)
	require.Equal(t, "OK", msgs[0].Str)
	require.Equal(t, "me", msgs[1].Str)
	require.Equal(t, []string{
		"SET poll:lease:a me NX PX 1000 => acquire ok",
		"GET poll:lease:a => read ok value me",
		"SET poll:lease:b me NX PX 1000 => acquire unknown",
		"GET poll:lease:b => read ok value me",
	}, summary(rec))
}

// A WAIT judges the writes before it in its batch, as the hook judges those before it in a
// pipeline; a WAIT sent on its own, after its write was answered, judges nothing.
func TestWireRecorderWaitVerdicts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), grantsWait{confirm: true})
	c := dialRaw(t, w.Addr())
	c.send("SET poll:lease:a me NX PX 1000", "DEL poll:lease:x", "WAIT 1 20", "SET poll:lease:b me NX PX 1000", "WAIT 0 20")
	require.Len(t, c.recv(5), 5)
	c.send("SET poll:lease:c me NX PX 1000")
	c.recv(1)
	c.send("WAIT 1 20")
	c.recv(1)
	require.Equal(t, []string{
		"SET poll:lease:a me NX PX 1000 => acquire ok not-replicated",
		"DEL poll:lease:x => release",
		"WAIT 1 20 => other",
		"SET poll:lease:b me NX PX 1000 => acquire ok",
		"WAIT 0 20 => other",
		"SET poll:lease:c me NX PX 1000 => acquire ok",
		"WAIT 1 20 => other",
	}, summary(rec))
}

// Every reply has its call and return times: the call when the command was read, the return when
// its reply was, so a pipeline's commands share neither.
func TestWireRecorderTimesEachCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, rec := newWire(t, srv.Addr(), nil)
	c := dialRaw(t, w.Addr())
	before := rec.Now()
	c.send("SET poll:lease:a me NX PX 1000")
	c.recv(1)
	c.send("BLPOP poll:empty 0.05", "GET poll:lease:a")
	c.recv(2)
	after := rec.Now()
	evs := rec.Events()
	require.Len(t, evs, 3)
	for _, e := range evs {
		require.True(t, before <= e.At && e.At <= e.End && e.End <= after, "%s: [%v, %v]", e.Op.Command, e.At, e.End)
	}
	require.GreaterOrEqual(t, evs[1].End-evs[1].At, 50*time.Millisecond, "BLPOP held its reply")
	require.Less(t, evs[2].At, evs[1].End, "GET was sent, in the pipeline, before BLPOP was answered")
	require.GreaterOrEqual(t, evs[2].End, evs[1].End, "and answered after it")
}

// The recorder passes everything on unchanged: the replies a client reads through it are the
// server's bytes.
func TestWireRecorderForwardsBytesUnchanged(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	w, _ := newWire(t, srv.Addr(), nil)
	direct, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = direct.Close() })
	via, err := net.Dial("tcp", w.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = via.Close() })
	req := resp.AppendCommand(nil, "HELLO", "3")
	req = resp.AppendCommand(req, "SET", "k", "\r\n\x00binary")
	req = resp.AppendCommand(req, "GET", "k")
	req = resp.AppendCommand(req, "CONFIG", "GET", "maxmemory*")
	read := func(conn net.Conn) string {
		_, err := conn.Write(req)
		require.NoError(t, err)
		rd := resp.NewReader(resp.Limits{})
		var got []byte
		buf := make([]byte, 4096)
		for n := 0; n < 4; {
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			k, err := conn.Read(buf)
			require.NoError(t, err)
			got = append(got, buf[:k]...)
			rd.Feed(buf[:k])
			for {
				_, ok, err := rd.Next()
				require.NoError(t, err)
				if !ok {
					break
				}
				n++
			}
		}
		return string(got)
	}
	want := read(direct)
	got := read(via)
	// The HELLO reply names the client's connection id, which differs; everything else is equal.
	require.Equal(t, want[strings.Index(want, "+OK"):], got[strings.Index(got, "+OK"):])
}
