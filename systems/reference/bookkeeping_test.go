package reference_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/systems/reference"
)

// argsHook keeps the arguments of every script command a client sends.
type argsHook struct{ scripts [][]any }

func (h *argsHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *argsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch cmd.Name() {
		case "eval", "evalsha":
			h.scripts = append(h.scripts, cmd.Args())
		}
		return next(ctx, cmd)
	}
}

func (h *argsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The reference declares its session change counter read a read of its own bookkeeping, by EVALSHA and
// by the EVAL that follows a NOSCRIPT reply, and none of its lease scripts.
func TestReferenceBookkeepingReads(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	h := &argsHook{}
	c.AddHook(h)
	_, err := (&lease.SessionSource{Client: c}).Targets(context.Background())
	require.NoError(t, err)

	r := reference.NewReference()
	require.Len(t, h.scripts, 2, "EVALSHA refused with NOSCRIPT, then EVAL")
	for _, args := range h.scripts {
		require.True(t, r.BookkeepingRead(args), "%v", args[0])
	}
	for sha := range lease.ScriptNames() {
		require.False(t, r.BookkeepingRead([]any{"evalsha", sha, 1, "poll:lease:x"}))
	}
	for _, src := range lease.Scripts() {
		require.False(t, r.BookkeepingRead([]any{"eval", src, 1, "poll:lease:x"}))
	}
}
