package peers

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// capture records the arguments and reply of every script call.
type capture struct {
	calls []call
}

type call struct {
	args  []any
	reply any
	err   error
}

func (c *capture) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *capture) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *capture) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			var reply any
			if rc, ok := cmd.(*redis.Cmd); ok {
				reply, _ = rc.Result()
			}
			c.calls = append(c.calls, call{args: cmd.Args(), reply: reply, err: err})
		}
		return err
	}
}

// The library's scripts are not exported: the classifier carries copies. This fails when the version in
// go.mod sends anything else, so a changed script cannot silently leave the lock unmodelled.
func TestRedisLockScripts(t *testing.T) {
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	var c capture
	client.AddHook(&c)
	ctx := context.Background()
	locker := redislock.New(client)
	lock, err := locker.Obtain(ctx, "poll:lease:ep-0", 3*time.Second, &redislock.Options{Token: "a-1"})
	require.NoError(t, err)
	_, err = locker.Obtain(ctx, "poll:lease:ep-0", 3*time.Second, &redislock.Options{Token: "b-1"})
	require.ErrorIs(t, err, redislock.ErrNotObtained)
	require.NoError(t, lock.Refresh(ctx, 3*time.Second, nil))
	require.NoError(t, lock.Release(ctx))
	require.ErrorIs(t, lock.Refresh(ctx, 3*time.Second, nil), redislock.ErrNotObtained)

	want := []struct {
		kind  history.OpKind
		owner string
		ok    bool
	}{
		{history.OpAcquire, "a-1", true},
		{history.OpAcquire, "b-1", false},
		{history.OpRenew, "a-1", true},
		{history.OpRelease, "a-1", true},
		{history.OpRenew, "a-1", false},
	}
	// go-redis tries EVALSHA first and falls back to EVAL on NOSCRIPT: keep the call that answered.
	var answered []call
	for _, cl := range c.calls {
		if cl.err != nil && cl.err != redis.Nil {
			continue
		}
		answered = append(answered, cl)
	}
	require.Len(t, answered, len(want))
	for i, w := range want {
		op, ok := RedisLock{}.Classify(answered[i].args, answered[i].reply, answered[i].err)
		require.True(t, ok, "call %d (%v) not recognised: the library's script changed", i, answered[i].args[:2])
		require.Equal(t, w.kind, op.Kind, "call %d", i)
		require.Equal(t, w.owner, op.Owner, "call %d", i)
		require.Equal(t, w.ok, op.OK, "call %d", i)
		require.Equal(t, "poll:lease:ep-0", op.Key)
	}
}
