package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// The teardown closes what the set-up opened, last first; an error of it fails a run that produced
// nothing, and is only listed for a run that produced a history.
func TestTeardownClosesLastFirstAndRoutesErrors(t *testing.T) {
	t.Parallel()
	var order []string
	var td teardown
	td.add(func() error { order = append(order, "backend"); return errors.New("backend would not stop") })
	td.add(func() error { order = append(order, "proxies"); return nil })
	td.add(func() error { order = append(order, "instances"); return errors.New("namespace left") })

	var res Result
	var err error
	td.run(&res, &err)
	require.Equal(t, []string{"instances", "proxies", "backend"}, order)
	require.ErrorContains(t, err, "namespace left")
	require.ErrorContains(t, err, "backend would not stop")
	require.Empty(t, res.CleanupErrors)

	res = Result{History: history.History{Events: []history.Event{{Kind: history.KindPoll}}}}
	err = nil
	td.run(&res, &err)
	require.NoError(t, err)
	require.Equal(t, []string{"namespace left", "backend would not stop"}, res.CleanupErrors)
}

type handshakeless struct{ System }

func (handshakeless) HandshakeReplies() int { return 0 }

// The history records how many set-up replies a fresh connection waits for, which the bound table
// multiplies a hold by: the harness's own go-redis clients' two, unless the system says otherwise.
func TestHistoryRecordsTheConnectionSetUp(t *testing.T) {
	t.Parallel()
	tm := SpecTiming()
	require.Equal(t, DefaultHandshakeReplies, metaTiming(nil, tm).HandshakeReplies)
	require.Equal(t, 0, metaTiming(handshakeless{}, tm).HandshakeReplies)
}

// A scenario's written step that takes endpoints from an instance it names owes a takeover, so the run
// must measure one; a slowing fault under which calls on open connections may still be answered owes
// none (the holder may keep its leases).
func TestAStepThatOwesATakeoverExercisesFailover(t *testing.T) {
	t.Parallel()
	one := func(f chaos.Fault) []string {
		return exercises(Scenario{Steps: chaos.Schedule{{At: time.Minute, For: 40 * time.Second, Fault: f}}}, SpecTiming())
	}
	failover := []string{checker.InvFailover}
	require.Equal(t, failover, one(chaos.Crash{Slot: 0}))
	require.Empty(t, one(chaos.Latency{Slot: -1, Latency: 600 * time.Millisecond, Jitter: 300 * time.Millisecond}))
	require.Equal(t, failover, one(chaos.Latency{Slot: 0, Latency: 5 * time.Second, Jitter: time.Second}), "no trip under 4 s: every 3 s call fails")
	require.Empty(t, one(chaos.SlowReplies{Slot: 0, Delay: 900 * time.Millisecond}), "blind for a fresh connection only")
	require.Equal(t, failover, one(chaos.SlowReplies{Slot: 0, Delay: 4 * time.Second}))
}
