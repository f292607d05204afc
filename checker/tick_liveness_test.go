package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// GAP (found wiring redis-semaphore, `redis-pause`: the holder's keys, renewed as Redis woke, expired
// with nobody holding them, and a survivor took them at its next discovery tick, 0.3-0.7 s past the
// deadline). A system that declares it looks for free endpoints every tick (its system file's
// promises.tick) takes over an endpoint up to a tick after it is owed, and promises no sooner; whether
// it promises failover or not, that is no stuck endpoint. The premise is read off the history: the
// first acquire of the endpoint sent after the deadline is the grant the taker polled on. An acquire
// refused after the deadline (the key still held) leaves the endpoint stuck whatever the tick, and so
// does a takeover past a whole tick.
//
// rtPair(5.5 s) with a's belief ended at 5.5 s: it stops renewing and polling, no fault on it, so the
// takeover of e1 is liveness's to judge, owed when a's key runs out.
func TestATakeoverWithinTheDeclaredTickIsNoStuckEndpoint(t *testing.T) {
	s := time.Second
	tick := func(d time.Duration) func(m *history.Meta) { return func(m *history.Meta) { m.Tick = d } }
	late := 8*s + ms(600) // about half a second past the deadline
	rtPair := func(cut time.Duration) *builder { return rtPair(cut).belief("a", "e1", cut, false, 1) }

	o, msg := rtOutcome(t, rtCheck(rtPair(5*s+ms(500)).rtTake("b", late).with(tick(s))), InvLiveness)
	require.Equal(t, Pass, o, msg)
	require.Contains(t, msg, "1 takeover came past the deadline by less than the system's declared tick (1s)")

	// No tick declared: the same takeover is an endpoint stuck past its deadline.
	o, msg = rtOutcome(t, rtCheck(rtPair(5*s+ms(500)).rtTake("b", late)), InvLiveness)
	require.Equal(t, Violated, o, msg)

	// The premise fails: b tried at 8.2 s, after the deadline, and was refused; the tick did not hold the
	// takeover back, something held the key.
	refused := rtPair(5*s+ms(500)).rtTake("b", late).with(tick(s)).
		op("b", history.OpAcquire, "poll:lease:e1", "b:x", 3*s, 8*s+ms(200), 8*s+ms(202), false, "a:10")
	o, msg = rtOutcome(t, rtCheck(refused), InvLiveness)
	require.Equal(t, Violated, o, msg)

	// Past a whole tick: stuck.
	o, msg = rtOutcome(t, rtCheck(rtPair(5*s+ms(500)).rtTake("b", 9*s+ms(200)).with(tick(s))), InvLiveness)
	require.Equal(t, Violated, o, msg)
}
