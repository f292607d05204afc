package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/lease"
)

// Reads of a system's own bookkeeping are counted per instance, not recorded; every lease operation,
// every write and every call that got no reply is still recorded as an event.
func TestBookkeepingReadsAreCountedNotRecorded(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rec := history.NewRecorderFrom(time.Now())
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	c.AddHook(&recordingHook{instance: "i0", rec: rec, classifier: scriptsAreBookkeeping{}, defaults: defaultClassifier{leasePrefix: "poll:lease:"}})
	ctx := context.Background()

	require.NoError(t, mr.Set("session:a", `{"id":"a"}`))
	require.NoError(t, mr.Set("poll:lease:a", "other:1"))
	p := c.Pipeline()
	p.Get(ctx, "session:a")
	p.Get(ctx, "session:b")          // absent: a reply all the same
	p.PTTL(ctx, "poll:node:i1")      // a heartbeat's expiry
	p.Get(ctx, "poll:lease:a")       // a lease key: modelled (read)
	p.PTTL(ctx, "poll:lease:a")      // a lease key: recorded although not modelled
	p.Set(ctx, "poll:node:i0", 1, 0) // a write
	_, _ = p.Exec(ctx)
	_ = c.Scan(ctx, 0, "session:*", 100).Err()
	src := &lease.SessionSource{Client: c} // its change counter read (a read-only script)
	_, err := src.Targets(ctx)
	require.NoError(t, err)

	ops := map[string]int{}
	for _, e := range rec.Events() {
		require.NotNil(t, e.Op)
		ops[e.Op.Command]++
	}
	require.Equal(t, map[string]int{"get poll:lease:a": 1, "pttl poll:lease:a": 1, "set poll:node:i0 1": 1}, ops)
	counted := rec.Counted()["i0"]
	require.EqualValues(t, 2, counted["get"], "two session reads")
	require.EqualValues(t, 1, counted["mget"], "the full read of the sessions")
	require.EqualValues(t, 1, counted["pttl"])
	require.EqualValues(t, 2, counted["scan"])
	require.EqualValues(t, 1, counted["evalsha"], "the change counter read (refused: NOSCRIPT)")
	require.EqualValues(t, 1, counted["eval"], "and sent again with its source")

	// Unanswered reads are recorded: a link failure is part of what happened.
	mr.Close()
	_ = c.Get(ctx, "session:a").Err()
	evs := rec.Events()
	last := evs[len(evs)-1]
	require.Equal(t, "get session:a", last.Op.Command)
	require.True(t, last.Op.Unknown)
}

// scriptsAreBookkeeping is a classifier that models nothing and declares every script a read of the
// system's own bookkeeping, as the reference does for its change counter read (the reference's own
// answer is tested with it, in systems/reference).
type scriptsAreBookkeeping struct{}

func (scriptsAreBookkeeping) Classify([]any, any, error) (history.Op, bool) {
	return history.Op{}, false
}

func (scriptsAreBookkeeping) BookkeepingRead(args []any) bool {
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		return true
	}
	return false
}
