package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// The deadlines of the model, on reference-like histories (see builder.hold): a holds e1 from 10 ms,
// renewing every second (its last renewal before 5.5 s is at 5.01 s), b holds e2 and heartbeats
// throughout, and the timing is the specification's at a tenth (TTL 3 s, renewals and heartbeats every
// second, calls bounded by 300 ms, polls of 100 ms every second; detection latency 1.3 s).

const tol = FailoverTolerance

// pair is the fleet before anything happens to it: a holds e1 until cut, b holds e2 and both heartbeat.
func pair(cut time.Duration) *builder {
	s := time.Second
	return newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("a", "e1", ms(10), cut).beats("a", ms(20), cut).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s)
}

// takeover adds b's takeover of e1 at at: an acquire granted, its renewals, its polls.
func (b *builder) takeover(inst string, at time.Duration) *builder {
	return b.hold(inst, "e1", at-ms(5), 20*time.Second)
}

// judge returns the failover and liveness results of h.
func judge(t *testing.T, b *builder) (Result, Result, Report) {
	t.Helper()
	rep := Check(b.build(), DefaultOptions())
	return resultOf(t, rep, InvFailover), resultOf(t, rep, InvLiveness), rep
}

// requireDeadline checks that a takeover just inside deadline passes and one just past it is a violation
// of inv, for the history more(pair(cut)) with the taker inst.
func requireDeadline(t *testing.T, inv string, deadline time.Duration, more func(b *builder) *builder, taker string) {
	t.Helper()
	for _, late := range []bool{false, true} {
		at := deadline - ms(2)
		if late {
			at = deadline + ms(2)
		}
		b := more(newBuilderFor(t)).takeover(taker, at)
		rep := Check(b.build(), DefaultOptions())
		r := resultOf(t, rep, inv)
		if late {
			require.Equal(t, Violated, r.Outcome, "a takeover at %v, past the deadline %v: %s", at, deadline, allText(r))
		} else {
			require.NotEqual(t, Violated, r.Outcome, "a takeover at %v, inside the deadline %v: %s", at, deadline, allText(r))
		}
	}
}

// newBuilderFor is pair(5.5 s), for requireDeadline.
func newBuilderFor(*testing.T) *builder { return pair(5*time.Second + ms(500)) }

func TestACrashIsOwedAtTheExpiryOfWhatTheHolderWrote(t *testing.T) {
	s := time.Second
	crash := func(b *builder) *builder {
		return b.fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
	}
	// a's last renewal (5.01 s, answered 5.012 s) keeps e1 until 8.012 s and the tick; its last heartbeat,
	// at 5.02 s, until 8.021 s. Both are within the specification's bound, a TTL after the crash.
	deadline := 5*s + ms(20) + ms(1) + 3*s + ExpiryTick + tol
	require.LessOrEqual(t, deadline, 5*s+ms(500)+SpecFailoverBound(3*s))
	requireDeadline(t, InvFailover, deadline, crash, "b")
	_, _, rep := judge(t, crash(pair(5*s+ms(500))).takeover("b", 7*s))
	require.Len(t, rep.Failovers, 1)
	require.Equal(t, string(EffectGone), rep.Failovers[0].Class)
	require.Contains(t, rep.Failovers[0].Why, "heartbeat")
}

func TestAPartitionIsOwedAtTheExpiryOfWhatLandedBeforeIt(t *testing.T) {
	s := time.Second
	// Cut off at 5.5 s: a's renewal at 6.01 s and heartbeat at 6.02 s are dropped, and it gives up at 6.31 s.
	// a, which does not know it yet, polls at 6.015 s as it did, and stops when it gives up.
	cut := func(b *builder) *builder {
		return b.fault("f1", "partition", 5*s+ms(500), 15*s, false, false, "a").
			lost("a", history.OpRenew, "e1", "a:10", 6*s+ms(10)).lostBeat("a", 6*s+ms(20)).
			poll("a", "e1", 6*s+ms(15), 6*s+ms(115), 1)
	}
	deadline := 5*s + ms(20) + ms(1) + 3*s + ExpiryTick + tol
	requireDeadline(t, InvFailover, deadline, cut, "b")
}

func TestABlindHolderIsOwedAtTheExpiryOfItsLastLandedWrite(t *testing.T) {
	s := time.Second
	// Replies lost from 5.5 s: the renewal at 6.01 s lands unseen and a gives up at 6.31 s; it sends no
	// more writes (it probes first). Its last write may have landed when it gave up: e1 is held until
	// 9.31 s and the tick.
	blind := func(b *builder) *builder {
		return b.fault("f1", "one-way-partition", 5*s+ms(500), 15*s, false, false, "a").
			lost("a", history.OpRenew, "e1", "a:10", 6*s+ms(10)).
			poll("a", "e1", 6*s+ms(15), 6*s+ms(115), 1)
	}
	deadline := 6*s + ms(310) + 3*s + ExpiryTick + tol
	requireDeadline(t, InvFailover, deadline, blind, "b")
}

func TestAGracefulStopIsOwedWhenItReleases(t *testing.T) {
	s := time.Second
	stop := func(released bool) func(b *builder) *builder {
		return func(b *builder) *builder {
			b.fault("f1", "stop", 5*s+ms(500), 5*s+ms(600), true, false, "a")
			if released {
				b.release("a", "e1", "a:10", 5*s+ms(600))
			}
			return b.life("a", history.LifeStopped, 5*s+ms(610))
		}
	}
	// The release is answered at 5.602 s; b, unimpeded, takes the endpoint at once.
	requireDeadline(t, InvFailover, 5*s+ms(602)+tol, stop(true), "b")

	// A stop that releases nothing is a violation of its own, whoever takes the endpoint and when.
	f, _, _ := judge(t, stop(false)(pair(5*s+ms(500))).takeover("b", 8*s+ms(100)))
	require.Equal(t, Violated, f.Outcome, allText(f))
	require.Contains(t, allText(f), "sent no release of it")
}

func TestAWipeHoldsGrantsForATTLAfterASystemCanLearnOfIt(t *testing.T) {
	s := time.Second
	// Redis restarts empty [5.5 s, 5.7 s]: a's key is gone, a's renewal at 6.01 s is refused and it lets
	// go; nothing may be granted until 5.7 s + 1.3 s + 3 s.
	wipe := func(b *builder) *builder {
		return b.fault("f1", "redis-restart", 5*s+ms(500), 5*s+ms(700), false, true).
			op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, 6*s+ms(10), 6*s+ms(12), false, "")
	}
	requireDeadline(t, InvLiveness, 5*s+ms(700)+ms(1300)+3*s+tol, wipe, "a")
}

func TestAHealthyHolderOwesItsCadence(t *testing.T) {
	s := time.Second
	// a renews until 15 s but stops polling at 5.5 s: nothing ended its holding.
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("a", ms(20), 20*s)
	b.op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, ms(10), ms(12), true, "")
	for at := s + ms(10); at < 15*s; at += s {
		b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
	}
	b.polls("a", "e1", ms(15), 5*s+ms(500), s, 1)
	_, l, _ := judge(t, b)
	require.Equal(t, Violated, l.Outcome, allText(l))
	require.Contains(t, allText(l), "cadence")
}

// The run ends at its recorded duration, when the harness stopped the fleet: a poll still in flight
// then is stamped when the teardown cuts it, later, and does not stretch the run. Without the
// duration, a's gap from its last poll (19.015 s) would be judged until that stamp (21 s), past its
// cadence's deadline (20.216 s).
func TestTheRunEndsAtItsDurationNotAtATeardownStamp(t *testing.T) {
	s := time.Second
	b := pair(20*s).poll("b", "e2", 19*s+ms(500), 21*s, 1).with(func(m *history.Meta) { m.Duration = 19*s + ms(600) })
	fo, live, _ := judge(t, b)
	require.NotEqual(t, Violated, live.Outcome, allText(live))
	require.NotEqual(t, Violated, fo.Outcome, allText(fo))
	b.with(func(m *history.Meta) { m.Duration = 0 })
	_, live, _ = judge(t, b)
	require.Equal(t, Violated, live.Outcome, "the control: judged until the stamp, the gap is late")
}

// A lock held on a majority of independent nodes (redlock) goes on when one node refuses a renewal the
// others grant: a holds e1 on three nodes, polls every second, and at 5.01 s redis-2 refuses its
// renewal while redis-0 and redis-1 grant it. Nothing ended; a's cadence is owed on, and b's attempt
// on one node at 5.1 s (granted there, then released: no majority) owes nothing. The control: two of
// the three refuse, and the holding ended: e1 was to be had when b's grant came, and a's next poll,
// 900 ms later, is past the takeover it owed.
func TestARefusalOnOneNodeOfAMajorityEndsNothing(t *testing.T) {
	s := time.Second
	nodes := []string{"redis-0", "redis-1", "redis-2"}
	build := func(refused int) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0)
		for _, n := range nodes {
			b.opOn(n, "a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true)
		}
		for at := s + ms(10); at < 20*s; at += s {
			for i, n := range nodes {
				ok := !(at == 5*s+ms(10) && i >= len(nodes)-refused)
				b.opOn(n, "a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, at, at+ms(2), ok)
			}
		}
		b.polls("a", "e1", ms(5), 20*s, s, 0)
		b.opOn("redis-2", "b", history.OpAcquire, "poll:lease:e1", "b:5100", 3*s, 5*s+ms(100), 5*s+ms(102), refused > 0).
			opOn("redis-2", "b", history.OpRelease, "poll:lease:e1", "b:5100", 0, 5*s+ms(103), 5*s+ms(104), refused > 0)
		return b
	}
	_, live, _ := judge(t, build(1))
	require.Equal(t, Pass, live.Outcome, allText(live))
	_, live, _ = judge(t, build(2))
	require.Equal(t, Violated, live.Outcome, allText(live))
	require.Contains(t, allText(live), "was refused")
}

// A key kept alive by another instance's unconditional renewal keeps it by the system's own doing, and
// buys the system no time: a holds e1 until it crashes at 5.5 s (its value lives until 8.013 s by its
// own last renewal, at 5.01 s); c, a stale former holder, sends PEXPIRE e1 3 s at 7.9 s, which finds a's
// value and extends it to 10.9 s. The takeover is owed when a's own writes run out and its heartbeat
// (8.022 s): b's takeover at 10.95 s, when the key let it in, is late. Without c's PEXPIRE, the key
// frees at 8.013 s, and a takeover at 8.05 s is in time.
func TestAnotherInstancesExtensionBuysNoTime(t *testing.T) {
	s := time.Second
	base := func() *builder {
		return pair(5*s+ms(500)).life("c", history.LifeStarted, 0).beats("c", ms(30), 20*s).
			fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
	}
	fo, _, _ := judge(t, base().op("c", history.OpRenew, "poll:lease:e1", history.AnyOwner, 3*s, 7*s+ms(900), 7*s+ms(902), true, "").
		takeover("b", 10*s+ms(950)))
	require.Equal(t, Violated, fo.Outcome, allText(fo))
	require.Contains(t, allText(fo), "unconditional renewal kept it until 10.903s, which buys the system no time")
	fo, _, _ = judge(t, base().takeover("b", 8*s+ms(50)))
	require.Equal(t, Pass, fo.Outcome, allText(fo))
}

// A release ends what its sender knew of its lease, but only until it may have taken effect: an
// unanswered release (given up at 6.3 s) leaves alone a grant of the same value sent after that (an
// election's value is its candidate's ID, the same each term). a's poll at 10.05 s, after its
// re-acquire at 10 s, is valid; one at 6.5 s, after the release, is not.
func TestAReleaseEndsTheLeaseUntilItMayHaveTakenEffect(t *testing.T) {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, 5*s, 5*s+ms(2), true, "").
		poll("a", "e1", 5*s+ms(5), 5*s+ms(100), 1).
		lost("a", history.OpRelease, "e1", "a", 6*s).
		poll("a", "e1", 6*s+ms(500), 6*s+ms(600), 1).
		op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, 10*s, 10*s+ms(2), true, "").
		poll("a", "e1", 10*s+ms(50), 10*s+ms(150), 1)
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvValidity)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Len(t, r.Violations, 1, allText(r))
	require.Equal(t, 6*s+ms(500), r.Violations[0].At)
}
