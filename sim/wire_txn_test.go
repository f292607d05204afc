package sim

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/internal/resp"
)

// A transaction's queued commands take their outcomes from EXEC's reply; when the transaction does
// not run (EXECABORT, a WATCH abort, DISCARD, a connection closed before EXEC) they are recorded as
// having had no effect.
func TestWireRecorderTransactions(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })

	t.Run("exec", func(t *testing.T) {
		w, rec := newWire(t, srv.Addr(), nil)
		c := dialRaw(t, w.Addr())
		c.send("MULTI", "SET poll:lease:a me NX PX 1000", "GET poll:lease:a", "EXEC")
		msgs := c.recv(4)
		require.Equal(t, "QUEUED", msgs[1].Str)
		require.Len(t, msgs[3].Elems, 2)
		require.Equal(t, []string{
			"MULTI => other",
			"SET poll:lease:a me NX PX 1000 => acquire ok",
			"GET poll:lease:a => read ok value me",
			"EXEC => other",
		}, summary(rec))
		evs := rec.Events()
		require.Equal(t, evs[3].End, evs[1].End, "queued commands return with EXEC")
	})
	t.Run("execabort", func(t *testing.T) {
		w, rec := newWire(t, srv.Addr(), nil)
		c := dialRaw(t, w.Addr())
		c.send("MULTI", "SET poll:lease:b me NX PX 1000", "SET poll:lease:b", "EXEC")
		msgs := c.recv(4)
		require.True(t, msgs[2].IsError())
		require.Contains(t, msgs[3].Str, "EXECABORT")
		require.Equal(t, []string{
			"MULTI => other",
			"SET poll:lease:b me NX PX 1000 => other err EXECABORT Transaction",
			"SET poll:lease:b => other err ERR wrong",
			"EXEC => other err EXECABORT Transaction",
		}, summary(rec))
		require.Zero(t, admin.Exists(ctx, "poll:lease:b").Val())
	})
	t.Run("watch abort", func(t *testing.T) {
		w, rec := newWire(t, srv.Addr(), nil)
		c := dialRaw(t, w.Addr())
		c.send("WATCH poll:lease:c")
		c.recv(1)
		require.NoError(t, admin.Set(ctx, "poll:lease:c", "other", 0).Err())
		c.send("MULTI", "DEL poll:lease:c", "EXEC")
		require.True(t, c.recv(3)[2].IsNull())
		require.Equal(t, []string{
			"WATCH poll:lease:c => other",
			"MULTI => other",
			"DEL poll:lease:c => other err EXEC returned",
			"EXEC => other err EXEC returned",
		}, summary(rec))
		require.Equal(t, "other", admin.Get(ctx, "poll:lease:c").Val())
	})
	t.Run("discard", func(t *testing.T) {
		w, rec := newWire(t, srv.Addr(), nil)
		c := dialRaw(t, w.Addr())
		c.send("MULTI", "SET poll:lease:d me NX PX 1000", "DISCARD")
		c.recv(3)
		require.Equal(t, []string{
			"MULTI => other",
			"SET poll:lease:d me NX PX 1000 => other err DISCARD: the",
			"DISCARD => other",
		}, summary(rec))
	})
	t.Run("closed before exec", func(t *testing.T) {
		w, rec := newWire(t, srv.Addr(), nil)
		c := dialRaw(t, w.Addr())
		c.send("MULTI", "SET poll:lease:e me NX PX 1000")
		c.recv(2)
		require.NoError(t, c.conn.Close())
		require.NoError(t, w.Close())
		require.Equal(t, []string{
			"MULTI => other",
			"SET poll:lease:e me NX PX 1000 => other err the connection",
		}, summary(rec))
		require.Zero(t, admin.Exists(ctx, "poll:lease:e").Val())

		// The same with a command still waiting for its QUEUED when the connection closes.
		w, rec = newWire(t, srv.Addr(), nil)
		c = dialRaw(t, w.Addr())
		c.send("MULTI")
		c.recv(1)
		c.send("SET poll:lease:e me NX PX 1000")
		require.NoError(t, c.conn.Close())
		require.Eventually(t, func() bool { return len(rec.Events()) == 2 }, 5*time.Second, time.Millisecond)
		require.Equal(t, []string{
			"MULTI => other",
			"SET poll:lease:e me NX PX 1000 => other err the connection",
		}, summary(rec))
	})
}

// EVALSHA of a script the server does not have fails with NOSCRIPT; the client loads it (SCRIPT LOAD)
// and calls again. The recorder learns the body, so the catalogue knows the script by its shape though
// this text was never catalogued as such; EVAL is recognised by its body.
func TestWireRecorderScriptsAndNoscript(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const catalogued = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
	sent := "\n  if redis.call('get', KEYS[1]) == ARGV[1] then\n    return redis.call('pexpire', KEYS[1], ARGV[2])\n  end\n  return 0\n"
	cat, err := NewScriptCatalogue(Script{Name: "renew", Source: catalogued, Op: "renew", OK: ReplyMatch{Int: intp(1)}})
	require.NoError(t, err)
	w, rec := newWire(t, srv.Addr(), cat)
	c := dialRaw(t, w.Addr())
	sha := sha1Hex(sent)
	c.send("SET poll:lease:a me NX PX 1000")
	c.recv(1)
	evalsha := []string{"EVALSHA", sha, "1", "poll:lease:a", "me", "5000"}
	write := func(cmds ...[]string) {
		var b []byte
		for _, cmd := range cmds {
			b = resp.AppendCommand(b, cmd...)
		}
		_, err := c.conn.Write(b)
		require.NoError(t, err)
	}
	write(evalsha)
	require.Contains(t, c.recv(1)[0].Str, "NOSCRIPT")
	write([]string{"SCRIPT", "LOAD", sent}, evalsha, []string{"EVAL", sent, "1", "poll:lease:a", "other", "5000"})
	msgs := c.recv(3)
	require.Equal(t, sha, msgs[0].Str)
	require.Equal(t, int64(1), msgs[1].Int)
	s := summary(rec)
	require.Len(t, s, 5)
	require.Equal(t, "EVALSHA "+sha[:8]+" 1 poll:lease:a me 5000 => other err NOSCRIPT No", s[1])
	require.Equal(t, "SCRIPT LOAD", s[2][:len("SCRIPT LOAD")])
	require.Equal(t, "EVALSHA "+sha[:8]+" 1 poll:lease:a me 5000 => renew ok", s[3])
	require.Contains(t, s[4], "=> renew", "EVAL of the same shape")
	require.NotContains(t, s[4], "ok", "another owner's renewal is refused")
}
