package peers

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// The classifier knows the library's scripts by their SHA1: this fails when the version in go.mod sends
// other scripts, so a change cannot silently leave the extension and unlock unmodelled.
func TestRedSyncScripts(t *testing.T) {
	for _, setnx := range []bool{false, true} {
		mr := miniredis.RunT(t)
		client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		var c capture
		client.AddHook(&c)
		ctx := context.Background()
		opts := []redsync.Option{redsync.WithExpiry(3 * time.Second), redsync.WithTries(1),
			redsync.WithGenValueFunc(func() (string, error) { return "a:1", nil })}
		if setnx {
			opts = append(opts, redsync.WithSetNXOnExtend())
		}
		m := redsync.New(goredis.NewPool(client)).NewMutex("poll:lease:ep-0", opts...)
		require.NoError(t, m.TryLockContext(ctx))
		ok, err := m.ExtendContext(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = m.UnlockContext(ctx)
		require.NoError(t, err)
		require.True(t, ok)

		sys := RedSync{SetNXOnExtend: setnx}
		extend := history.OpRenew
		if setnx {
			extend = history.OpAcquire
		}
		want := []history.OpKind{extend, history.OpRelease}
		var got []history.OpKind
		for _, cl := range c.calls {
			if cl.err != nil && cl.err != redis.Nil {
				continue // NOSCRIPT before go-redis falls back to EVAL
			}
			op, ok := sys.Classify(cl.args, cl.reply, cl.err)
			require.True(t, ok, "%v not recognised: the library's script changed", cl.args[:2])
			require.Equal(t, "a:1", op.Owner)
			require.True(t, op.OK)
			got = append(got, op.Kind)
		}
		require.Equal(t, want, got, "SetNXOnExtend %v", setnx)
		client.Close()
	}
}
