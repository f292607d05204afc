package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// GAP (found wiring redis-semaphore: a refresh that timed out ended the Node process). A holder that
// ends by itself, with no fault of the harness on it (a process that exited: the harness records it
// crashed), is a failed holder as much as one the harness killed: its endpoints' takeover is a
// failover, measured from its end against the failover bound, and shown with its cause. The model
// judged such a gap by liveness alone, as a stuck endpoint with no cause, so a system that does not
// promise failover (a lock library whose survivors look for work at a tick) failed liveness for what
// its failover verdict would have explained, and one that does had its late takeover reported without
// the end that began it.
//
// rtPair: a holds e1 and crashes at 5.5 s, on its own; its lease runs out at 8.022 s, deadline 8.123 s.
func TestAHolderThatEndedByItselfIsTakenOverAsAfterACrash(t *testing.T) {
	s := time.Second
	exit := func(take time.Duration) *builder {
		return rtPair(5*s+ms(500)).life("a", history.LifeCrashed, 5*s+ms(500)).rtTake("b", take).rtToken("b", "e1", 2)
	}
	rep := rtCheck(exit(8*s + ms(600)))
	o, msg := rtOutcome(t, rep, InvFailover)
	require.Equal(t, Violated, o, msg)
	require.Contains(t, msg, "1 endpoint went unpolled past the deadline after a fault on its holder")
	var why string
	for _, r := range rep.Results {
		if r.Invariant == InvFailover && len(r.Violations) > 0 {
			why = r.Violations[0].Message
		}
	}
	require.True(t, strings.Contains(why, "exited") || strings.Contains(why, "exit"), "the violation names the end: %s", why)
	o, msg = rtOutcome(t, rep, InvLiveness)
	require.Equal(t, Pass, o, "the gap is failover's, not a stuck endpoint: %s", msg)

	// On time after its end: nothing to report.
	rep = rtCheck(exit(8*s + ms(50)))
	o, msg = rtOutcome(t, rep, InvFailover)
	require.Equal(t, Pass, o, msg)
	o, msg = rtOutcome(t, rep, InvLiveness)
	require.Equal(t, Pass, o, msg)

	// The premise fails: a graceful stop is no failure. The same late takeover is a handoff's matter,
	// judged as before (not as an exit).
	stop := rtPair(5*s+ms(500)).life("a", history.LifeStopped, 5*s+ms(500)).rtTake("b", 8*s+ms(600)).rtToken("b", "e1", 2)
	rep = rtCheck(stop)
	for _, r := range rep.Results {
		for _, v := range r.Violations {
			require.NotContains(t, v.Message, "exited by itself", "%s: a graceful stop taken for an exit", r.Invariant)
		}
	}
}
