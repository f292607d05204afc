package sim

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// The hook records a command's arguments as they went out on the wire, whatever Go types the caller
// gave go-redis, so that it and the wire recorder write the same Command for the same traffic.
func TestRecordingHookRecordsArgumentsAsSent(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rec := history.NewRecorderFrom(time.Now())
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(&recordingHook{instance: "i0", rec: rec, defaults: defaultClassifier{leasePrefix: "poll:lease:"}})
	ctx := context.Background()

	require.NoError(t, c.ZAdd(ctx, "poll:nodes", redis.Z{Score: 1795722348292, Member: "i0"}).Err())
	require.NoError(t, c.Do(ctx, "set", "flag", true).Err())
	require.NoError(t, c.Do(ctx, "set", "blob", []byte("raw")).Err())
	var cmds []string
	for _, e := range rec.Events() {
		cmds = append(cmds, e.Op.Command)
	}
	require.Equal(t, []string{"zadd poll:nodes 1795722348292 i0", "set flag 1", "set blob raw"}, cmds)
}
