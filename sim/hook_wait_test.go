package sim

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
)

// grantsWait is a classifier that models plain commands as the built-in classifier does and counts a
// grant (SET NX PX) only once WAIT confirms it, as a system with lease.Config.WaitReplicas does.
type grantsWait struct{ confirm bool }

func (grantsWait) Classify([]any, any, error) (history.Op, bool) { return history.Op{}, false }

func (g grantsWait) ConfirmedByWait(op history.Op) bool {
	return g.confirm && op.Kind == history.OpAcquire
}

// A write answered OK and followed in its pipeline by a WAIT that reports fewer replicas than it asked
// for is recorded NotReplicated when the system counts it only once WAIT confirms it; a WAIT that is
// satisfied, a write the system counts regardless, a write after the WAIT, and a classifier without the
// capability leave it acknowledged. A lone redis-server has no replica, so WAIT 1 answers 0.
func TestRecordingHookMarksWritesWaitDidNotConfirm(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	record := func(c OpClassifier, send func(p redis.Pipeliner)) []history.Event {
		rec := history.NewRecorderFrom(time.Now())
		cl := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		defer cl.Close()
		require.NoError(t, cl.FlushAll(ctx).Err()) // the test's own private server
		cl.AddHook(&recordingHook{instance: "i0", rec: rec, classifier: c, defaults: defaultClassifier{leasePrefix: "poll:lease:"}})
		p := cl.Pipeline()
		send(p)
		_, _ = p.Exec(ctx)
		var out []history.Event
		for _, e := range rec.Events() {
			if e.Op.Kind != history.OpOther {
				out = append(out, e)
			}
		}
		return out
	}
	grantThenWait := func(replicas int) func(p redis.Pipeliner) {
		return func(p redis.Pipeliner) {
			p.SetNX(ctx, "poll:lease:a", "i0:1", time.Second)
			p.Del(ctx, "poll:lease:b")
			p.Process(ctx, redis.NewIntCmd(ctx, "wait", replicas, 20))
			p.SetNX(ctx, "poll:lease:c", "i0:2", time.Second)
		}
	}

	evs := record(grantsWait{confirm: true}, grantThenWait(1))
	require.Len(t, evs, 3)
	require.Equal(t, history.OpAcquire, evs[0].Op.Kind)
	require.True(t, evs[0].Op.OK)
	require.True(t, evs[0].Op.NotReplicated, "WAIT 1 answered 0: the grant before it is not confirmed")
	require.Equal(t, history.OpRelease, evs[1].Op.Kind)
	require.False(t, evs[1].Op.NotReplicated, "a release the system counts whatever WAIT says")
	require.Equal(t, "poll:lease:c", evs[2].Op.Key)
	require.False(t, evs[2].Op.NotReplicated, "a grant after the WAIT is not judged by it")

	evs = record(grantsWait{confirm: true}, grantThenWait(0))
	require.False(t, evs[0].Op.NotReplicated, "WAIT 0 is satisfied")

	evs = record(grantsWait{confirm: false}, grantThenWait(1))
	require.False(t, evs[0].Op.NotReplicated, "the system relies on the grant whatever WAIT says")

	evs = record(scriptsAreBookkeeping{}, grantThenWait(1))
	require.False(t, evs[0].Op.NotReplicated, "a classifier without WaitConfirmer")

	// A refused grant wrote nothing: there is nothing to confirm.
	evs = record(grantsWait{confirm: true}, func(p redis.Pipeliner) {
		p.Set(ctx, "poll:lease:a", "other", time.Second)
		p.SetNX(ctx, "poll:lease:a", "i0:1", time.Second)
		p.Process(ctx, redis.NewIntCmd(ctx, "wait", 1, 20))
	})
	require.Len(t, evs, 1)
	require.False(t, evs[0].Op.OK)
	require.False(t, evs[0].Op.NotReplicated)
}
