package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// crashBase: a polls e1 every second until 5 s (token 1); a fault hits a at 5.5 s.
func crashBase() *builder {
	return newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		polls("a", "e1", 0, 5*time.Second+ms(500), time.Second, 1).
		polls("b", "e2", 0, 20*time.Second, time.Second, 1)
}

func TestFailover(t *testing.T) {
	s := time.Second
	tests := []struct {
		name      string
		b         *builder
		outcome   Outcome
		failovers int
		latency   time.Duration // of the e1 failover; -1 when never polled
		to        string
		msg       string
	}{
		{
			name: "crash taken over in time",
			b: crashBase().fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").
				life("a", history.LifeCrashed, 5*s+ms(500)).
				polls("b", "e1", 8*s, 20*s, s, 2),
			outcome: Pass, failovers: 1, latency: 2500 * time.Millisecond, to: "b", msg: "p50 2.5s",
		},
		{
			// The pause was armed at 5.5 s and took hold at a's next poll, 6 s: measured from there.
			name: "pause measured from when it took hold",
			b: crashBase().fault("f1", "pause", 5*s+ms(500), 15*s, false, false, "a").
				life("a", history.LifePaused, 6*s).life("a", history.LifeResumed, 15*s).
				polls("b", "e1", 10*s+ms(800), 20*s, s, 2),
			outcome: Pass, failovers: 1, latency: 4800 * time.Millisecond, to: "b", msg: "p50 4.8s",
		},
		{
			name: "crash taken over too slowly",
			b: crashBase().fault("f1", "crash", 5*s+ms(500), 0, true, false, "a").
				polls("b", "e1", 12*s, 20*s, s, 2),
			outcome: Violated, failovers: 1, latency: 6500 * time.Millisecond, to: "b", msg: "over the bound",
		},
		{
			name:    "crash never taken over",
			b:       crashBase().fault("f1", "crash", 5*s+ms(500), 0, true, false, "a"),
			outcome: Violated, failovers: 1, latency: -1, msg: "never polled again",
		},
		{
			name: "zombie polls of the crashed instance do not count",
			b: crashBase().fault("f1", "crash", 5*s+ms(500), 0, true, false, "a").
				polls("a", "e1", 6*s, 20*s, s, 1),
			outcome: Violated, failovers: 1, latency: -1, msg: "never polled again",
		},
		{
			// Nobody can poll during an outage of the whole fleet: the clock starts when it ends.
			name: "fleet-wide outage measured from its end",
			b: crashBase().fault("f1", "outage", 5*s+ms(500), 9*s+ms(500), false, false, "a", "b").
				polls("a", "e1", 12*s, 20*s, s, 1),
			outcome: Pass, failovers: 2, latency: 2500 * time.Millisecond, to: "a",
		},
		{
			name: "fleet-wide outage with a slow recovery",
			b: crashBase().fault("f1", "outage", 5*s+ms(500), 9*s+ms(500), false, false, "a", "b").
				polls("a", "e1", 15*s, 20*s, s, 1),
			outcome: Violated, failovers: 2, latency: 5500 * time.Millisecond, to: "a", msg: "over the bound",
		},
		{
			// The stop's handoff had not happened when Redis restarted empty 0.2 s later: no survivor
			// can acquire until it is back and its fresh-dataset guard (a TTL) is over.
			name: "a backend restart within the bound restarts the clock",
			b: crashBase().fault("f1", "stop", 5*s+ms(500), 5*s+ms(500), true, false, "a").
				fault("f2", "redis-restart", 5*s+ms(700), 8*s, false, true).
				polls("b", "e1", 11*s, 20*s, s, 2),
			outcome: Pass, failovers: 1, latency: 3 * time.Second, to: "b",
		},
		{
			name: "slow after the backend restart",
			b: crashBase().fault("f1", "stop", 5*s+ms(500), 5*s+ms(500), true, false, "a").
				fault("f2", "redis-restart", 5*s+ms(700), 8*s, false, true).
				polls("b", "e1", 13*s+ms(500), 20*s, s, 2),
			outcome: Violated, failovers: 1, latency: 5500 * time.Millisecond, to: "b", msg: "over the bound",
		},
		{
			// Already late when the backend went: judged from the stop.
			name: "a backend restart after the bound does not excuse a late takeover",
			b: crashBase().fault("f1", "stop", 5*s+ms(500), 5*s+ms(500), true, false, "a").
				fault("f2", "redis-restart", 11*s, 11*s+ms(300), false, true).
				polls("b", "e1", 12*s, 20*s, s, 2),
			outcome: Violated, failovers: 1, latency: 6500 * time.Millisecond, to: "b", msg: "over the bound",
		},
		{
			name: "partitioned holder resumes after the fault",
			b: crashBase().fault("f1", "partition", 5*s+ms(500), 7*s, false, false, "a").
				polls("a", "e1", 7*s+ms(500), 20*s, s, 1),
			outcome: Pass, failovers: 1, latency: 2 * time.Second, to: "a",
		},
		{
			name: "polls during the partition do not count",
			b: crashBase().fault("f1", "partition", 5*s+ms(500), 11*s+ms(500), false, false, "a").
				poll("a", "e1", 6*s, 6*s+ms(100), 1).
				polls("a", "e1", 12*s, 20*s, s, 1),
			outcome: Violated, failovers: 1, latency: 6500 * time.Millisecond, to: "a",
		},
		{
			name: "latency fault is not a failover",
			b: crashBase().fault("f1", "latency", 5*s+ms(500), 7*s, false, false, "a").
				polls("a", "e1", 12*s, 20*s, s, 1),
			outcome: Pass, failovers: 0,
		},
		{
			name: "paused endpoint is not measured",
			b: crashBase().fault("f1", "crash", 5*s+ms(500), 0, true, false, "a").
				session("e1", history.SessionPaused, 6*s),
			outcome: Pass, failovers: 0,
		},
		{
			name: "scale-up handoff within the bound",
			b: newBuilder().life("a", history.LifeStarted, 0).life("c", history.LifeStarted, 10*s).
				polls("a", "e1", 0, 10*s+ms(500), s, 1).polls("c", "e1", 12*s, 20*s, s, 2),
			outcome: Pass,
		},
		{
			name: "scale-up missed polls beyond the bound",
			b: newBuilder().life("a", history.LifeStarted, 0).life("c", history.LifeStarted, 10*s).
				polls("a", "e1", 0, 10*s+ms(500), s, 1).polls("c", "e1", 17*s, 20*s, s, 2),
			outcome: Violated, msg: "not polled for 7s",
		},
		{
			// A restart under a new ID: the window around the start is counted from the crash, as the
			// failover is, not from the last poll before it.
			name: "restart judged from the fault, not from the last poll",
			b: crashBase().fault("f1", "restart", 5*s+ms(500), 5*s+ms(500), true, false, "a").
				life("a", history.LifeCrashed, 5*s+ms(500)).life("a2", history.LifeStarted, 5*s+ms(500)).
				polls("a2", "e1", 10*s+ms(400), 20*s, s, 2),
			outcome: Pass, failovers: 1, latency: 4900 * time.Millisecond, to: "a2",
		},
		{
			name: "scale-down leaves an endpoint unpolled",
			b: newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
				life("a", history.LifeStopped, 8*s).
				polls("a", "e1", 0, 8*s, s, 1).polls("b", "e2", 0, 20*s, s, 1),
			outcome: Violated, msg: "around a stopped",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.b.build(), DefaultOptions())
			r := resultOf(t, rep, InvFailover)
			require.Equal(t, tc.outcome, r.Outcome, r.Message)
			require.Contains(t, allText(r), tc.msg)
			require.Len(t, rep.Failovers, tc.failovers)
			if tc.failovers > 0 {
				fo := rep.Failovers[0]
				require.Equal(t, "e1", fo.Endpoint)
				require.Equal(t, "a", fo.From)
				require.Equal(t, tc.to, fo.To)
				require.Equal(t, tc.latency, fo.Latency)
				require.Equal(t, 5*time.Second, fo.Bound)
				require.Equal(t, "f1", fo.FaultID)
			}
			if tc.outcome == Violated {
				require.NotEmpty(t, r.Violations)
				require.Equal(t, "e1", r.Violations[0].Endpoint)
			}
		})
	}
}

// The specification's bound is the TTL plus the measuring tolerance; a history that carries it is
// judged and labelled by it, and one with a bound of its own names both.
func TestFailoverSpecBound(t *testing.T) {
	s := time.Second
	require.Equal(t, 3*s+FailoverTolerance, SpecFailoverBound(3*s))
	takeover := func(at time.Duration) *builder {
		return crashBase().fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").
			life("a", history.LifeCrashed, 5*s+ms(500)).
			polls("b", "e1", at, 20*s, s, 2)
	}
	tests := []struct {
		name    string
		bound   time.Duration
		at      time.Duration // first poll by the survivor
		outcome Outcome
		msg     string
	}{
		{"spec bound met at the TTL", SpecFailoverBound(3 * s), 8*s + ms(500), Pass, "(the specification's: lease TTL + 101ms)"},
		{"spec bound met within the tolerance", SpecFailoverBound(3 * s), 8*s + ms(590), Pass, "max 3.09s"},
		{"spec bound missed by a discovery tick", SpecFailoverBound(3 * s), 9*s + ms(500), Violated, "over the bound 3.101s"},
		{"own bound shown beside the spec's", 5 * s, 9*s + ms(500), Pass, "this scenario's own; the specification's is 3.101s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := takeover(tc.at)
			b.meta.FailoverBound = tc.bound
			r := resultOf(t, Check(b.build(), DefaultOptions()), InvFailover)
			require.Equal(t, tc.outcome, r.Outcome, r.Message)
			require.Contains(t, allText(r), tc.msg)
		})
	}
}

// Another instance hands e2 to the crashed one, still counted alive when its replacement starts: the
// missed-poll window around the start runs from the crash, and here it outlasts the bound.
func TestScaleGapCountedFromRemovingFault(t *testing.T) {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		polls("a", "e1", 0, 5*s+ms(500), s, 1).polls("b", "e2", 0, 5*s+ms(200), s, 1).
		fault("f1", "restart", 5*s+ms(500), 5*s+ms(500), true, false, "a").
		life("a", history.LifeCrashed, 5*s+ms(500)).life("a2", history.LifeStarted, 5*s+ms(500)).
		polls("a2", "e1", 9*s+ms(500), 20*s, s, 2).polls("a2", "e2", 10*s+ms(600), 20*s, s, 2)
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvFailover)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Len(t, r.Violations, 1, allText(r))
	require.Equal(t, "e2", r.Violations[0].Endpoint)
	require.Contains(t, r.Violations[0].Message, "e2 not polled for 5.1s (from 5.5s to 10.6s, counted from the fault")
}

// A graceful stop is held to the history's handoff bound when it has one; a crash, in the same history,
// still to the failover bound.
func TestHandoffBound(t *testing.T) {
	s := time.Second
	stop := func(name string, at time.Duration) *builder {
		b := crashBase().fault("f1", name, 5*s+ms(500), 5*s+ms(500), true, false, "a").
			life("a", history.LifeStopped, 5*s+ms(500)).
			polls("b", "e1", at, 20*s, s, 2)
		b.meta.HandoffBound = 200 * time.Millisecond
		return b
	}
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		msg     string
	}{
		{"stop handed over in milliseconds", stop("stop", 5*s+ms(520)), Pass, "handoff bound 200ms for graceful stops"},
		{"stop left to expire", stop("stop", 8*s+ms(500)), Violated, "after 3s, over the handoff bound 200ms"},
		{"crash judged by the failover bound", stop("crash", 8*s+ms(500)), Pass, "against the bound 5s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.b.build(), DefaultOptions())
			r := resultOf(t, rep, InvFailover)
			require.Equal(t, tc.outcome, r.Outcome, r.Message)
			require.Contains(t, allText(r), tc.msg)
		})
	}
}

// A stop hands e1 to b, which polls it and then crashes: the window from b's last poll to the next
// poll spans b's crash, and what follows the crash is its failover (judged from the crash, with the
// same bound) rather than time the stop lost. Counted from the crash it is within the bound; a window
// that the crash of another instance does not explain is still judged from its last poll.
func TestScaleGapSpanningThePollersCrash(t *testing.T) {
	s := time.Second
	base := func(crashed string) *builder {
		return newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			life("c", history.LifeStarted, 0).life("d", history.LifeStarted, 0).
			polls("a", "e1", 0, 5*s, s, 1).
			fault("f1", "stop", 5*s, 5*s, true, false, "a").life("a", history.LifeStopped, 5*s).
			polls("b", "e1", 5*s+ms(200), 6*s+ms(300), s, 2).
			fault("f2", "crash", 6*s+ms(500), 6*s+ms(500), true, false, crashed).
			life(crashed, history.LifeCrashed, 6*s+ms(500)).
			polls("c", "e1", 11*s+ms(300), 20*s, s, 3)
	}
	r := resultOf(t, Check(base("b").build(), DefaultOptions()), InvFailover)
	require.Equal(t, Pass, r.Outcome, allText(r))

	r = resultOf(t, Check(base("d").build(), DefaultOptions()), InvFailover)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Contains(t, allText(r), "e1 not polled for 5.1s (from 6.2s to 11.3s) around a stopped at 5s")
}
