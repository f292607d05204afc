package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// Every allowance of the model checks its premise in the history (docs/checker.md lists them). Each test
// here writes a history in which the premise fails, and shows the finding is then reported.

// A fault on the holder's link ends its cadence only through a call of its own that went unanswered:
// a holder whose calls were all answered under a partition window (a fault log entry, nothing more) owes
// its cadence, and one that stops polling is late.
func TestAFaultWithoutAnUnansweredCallEndsNothing(t *testing.T) {
	s := time.Second
	b := pair(20*s).fault("f1", "partition", 5*s+ms(500), 6*s, false, false, "a")
	b.events = dropPolls(b.events, "a", "e1", 6*s, 9*s)
	_, l, _ := judge(t, b)
	require.Equal(t, Violated, l.Outcome, allText(l))
	require.Contains(t, allText(l), "cadence")
}

// A taker's impediment delays a takeover only when the history shows it: a crash's takeover by an
// instance that was under a one-way partition but whose calls were all answered (it sent none, or they
// came back) gets no detection latency after the fault; late, it is a violation.
func TestATakerWhoseCallsWereAnsweredIsNotBlind(t *testing.T) {
	s := time.Second
	crash := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
		fault("f2", "one-way-partition", 4*s, 9*s, false, false, "b")
	// e1 is owed at 8.021 s and the tick; the taker b was blind until 9 s by the fault log only.
	f, _, _ := judge(t, crash.takeover("b", 9*s+ms(500)))
	require.Equal(t, Violated, f.Outcome, allText(f))

	// Its own unanswered call during the fault is the premise: then it needs the detection latency after
	// the fault's end, 10.3 s.
	crash = pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
		fault("f2", "one-way-partition", 4*s, 9*s, false, false, "b").lostBeat("b", 8*s+ms(100))
	f, _, _ = judge(t, crash.takeover("b", 10*s+ms(300)))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
}

// The fleet may leave an endpoint to an instance the history shows it may have been assigned to while
// that instance cannot act: one that tried to acquire it (a waiting taker refused at 7.04 s, crashed at
// 7.95 s), or one the others still counted a member when the endpoint moved, at the moment the holder's
// heartbeat ran out (the fleet assigns it afresh then, among the members it counts on: explore and
// late-replies-then-stall, campaign seed 269062138, where the endpoints of a stalled holder went to
// another stalled member whose heartbeat outlived the holder's). Either is counted on until its
// heartbeat runs out. A member gone before the endpoint moved, or one that could act, moves nothing.
func TestTheFleetWaitsOnlyForAnAssigneeTheHistoryShows(t *testing.T) {
	s := time.Second
	base := func(tried bool, cCrash, cBeats time.Duration) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 5*s+ms(500)).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
			beats("c", ms(30), cBeats).
			fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
		if cCrash > 0 {
			b.fault("f2", "crash", cCrash, cCrash, true, false, "c").life("c", history.LifeCrashed, cCrash)
		}
		if tried {
			b.op("c", history.OpAcquire, "poll:lease:e1", "c:7040", 3*s, 7*s+ms(40), 7*s+ms(42), false, "")
		}
		return b
	}
	// e1 is free at 8.012 s (a's last renewal) and a's heartbeat runs out at 8.021 s; c's, written last
	// at 7.03 s, at 10.031 s. With c shown assigned (its refused acquire), or a member when e1 moved at
	// 8.021 s, b may take e1 at 10 s.
	f, _, _ := judge(t, base(true, 7*s+ms(950), 7*s+ms(950)).takeover("b", 10*s))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
	f, _, _ = judge(t, base(false, 7*s+ms(950), 7*s+ms(950)).takeover("b", 10*s))
	require.NotEqual(t, Violated, f.Outcome, "c was a member when e1 moved: %s", allText(f))
	// c gone before e1 moved: its heartbeat, written last at 4.03 s, ran out at 7.03 s.
	f, _, _ = judge(t, base(false, 4*s+ms(950), 4*s+ms(950)).takeover("b", 10*s))
	require.Equal(t, Violated, f.Outcome, "c was no member when e1 moved: %s", allText(f))
	// c a member, and able to act: nothing to wait for.
	f, _, _ = judge(t, base(false, 0, 20*s).takeover("b", 10*s))
	require.Equal(t, Violated, f.Outcome, "c could act: %s", allText(f))
}

// A short partition of the holder costs the takeover what it physically can: the detection latency after
// it, not a lease TTL each time.
func TestAShortPartitionCostsADetectionLatency(t *testing.T) {
	s := time.Second
	// a is cut off for 100 ms at 5.5 s; its renewal at 5.51 s goes unanswered (sent before the window
	// took hold, it may have landed) and it gives up at 5.81 s. Its value may be in the key until 8.8 s.
	// Nobody else is shown assigned e1; a itself is ready again at 5.6 s + 1.3 s.
	b := pair(5*s+ms(505)).fault("f1", "partition", 5*s+ms(500), 5*s+ms(600), false, false, "a").
		lost("a", history.OpRenew, "e1", "a:10", 5*s+ms(510))
	// The takeover waits for the key (8.81 s): the holder's value, believed and landed in the course of
	// things, may run out its TTL. A takeover at 9 s is late.
	f, _, _ := judge(t, b.takeover("b", 9*s))
	require.Equal(t, Violated, f.Outcome, allText(f))
}

// A guard holds grants for a TTL after a data loss a system can learn of; a promotion that comes after a
// takeover's deadline is another event, and moves nothing.
func TestAPromotionAfterTheDeadlineMovesNothing(t *testing.T) {
	s := time.Second
	crash := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
	late := crash.note(history.NotePromotion+"redis-0 -> redis-1", 8*s+ms(500))
	f, _, _ := judge(t, late.takeover("b", 9*s))
	require.Equal(t, Violated, f.Outcome, allText(f))

	early := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
		note(history.NotePromotion+"redis-0 -> redis-1", 7*s)
	f, _, _ = judge(t, early.takeover("b", 11*s))
	require.NotEqual(t, Violated, f.Outcome, "a promotion at 7 s holds grants until 11.3 s: %s", allText(f))
}

// A handoff may wait for any member the fleet counted on when it released, one gone without a word
// included, until its heartbeat runs out; a stop that released nothing is not excused by it.
func TestAHandoffWaitsForAMemberTheFleetCountedOn(t *testing.T) {
	s := time.Second
	b := func(released bool) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 5*s+ms(500)).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("c", ms(30), 5*s+ms(450)).
			fault("f1", "crash", 5*s+ms(450), 5*s+ms(450), true, false, "c").life("c", history.LifeCrashed, 5*s+ms(450)).
			fault("f2", "stop", 5*s+ms(500), 5*s+ms(600), true, false, "a")
		if released {
			b.release("a", "e1", "a:10", 5*s+ms(600))
		}
		return b.life("a", history.LifeStopped, 5*s+ms(610))
	}
	// c's heartbeat, written last at 5.03 s, runs out at 8.031 s: e1 may have gone to c.
	f, _, _ := judge(t, b(true).takeover("b", 8*s+ms(100)))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
	f, _, _ = judge(t, b(false).takeover("b", 8*s+ms(100)))
	require.Equal(t, Violated, f.Outcome, allText(f))
	require.Contains(t, allText(f), "sent no release")
}

// A takeover is the first valid poll: a poll by an instance outside its confirmed lease (a paused holder
// waking with its old token) ends no gap, and a late takeover behind it is still late.
func TestATakeoverIsTheFirstValidPoll(t *testing.T) {
	s := time.Second
	crash := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
		life("c", history.LifeStarted, 0).
		poll("c", "e1", 8*s, 8*s+ms(100), 1) // c never held e1
	rep := Check(crash.takeover("b", 12*s).build(), DefaultOptions())
	require.Equal(t, Violated, resultOf(t, rep, InvFailover).Outcome, allText(resultOf(t, rep, InvFailover)))
	require.Equal(t, Violated, resultOf(t, rep, InvValidity).Outcome, "c polled without a lease")
}

// A pause outside the assumptions explains a belief's overstay only as far as it lasted: 10 ms two
// seconds earlier does not explain 12 s.
func TestAPauseExplainsOnlyWhatItsLengthCan(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01, "pause").life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:1", 3*s, 0, ms(2), true, "").
		held("a", "e1", ms(2), 1, history.ReasonAcquired, 0).poll("a", "e1", ms(5), ms(10), 1).
		fault("f1", "pause", 1*s, 1*s+ms(10), false, false, "a").
		life("a", history.LifePaused, s).life("a", history.LifeResumed, s+ms(10)).
		op("b", history.OpAcquire, "poll:lease:e1", "b:4", 3*s, 4*s, 4*s+ms(2), true, "").
		held("b", "e1", 4*s+ms(2), 2, history.ReasonAcquired, 0).
		belief("a", "e1", 16*s, false, 1)
	rep := Check(b.build(), DefaultOptions())
	for _, inv := range []string{InvSingleHolder, InvStaleBelief} {
		r := resultOf(t, rep, inv)
		require.Equal(t, Violated, r.Outcome, "%s: %s", inv, allText(r))
		require.Empty(t, r.Caught, "a 10 ms pause explains none of it")
	}
}

// A stale poll refused by fencing is caught only when an outside fault can account for it: long after a
// short pause, it is a violation.
func TestAStalePollLongAfterAPauseIsAViolation(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01, "pause").with(func(m *history.Meta) { m.Fencing = true }).
		op("a", history.OpAcquire, "poll:lease:e1", "a:1", 3*s, 0, ms(2), true, "").
		poll("a", "e1", ms(5), ms(100), 1).
		fault("f1", "pause", s, s+ms(50), false, false, "a").life("a", history.LifePaused, s).life("a", history.LifeResumed, s+ms(50)).
		op("b", history.OpAcquire, "poll:lease:e1", "b:4", 3*s, 4*s, 4*s+ms(2), true, "").
		poll("b", "e1", 4*s+ms(5), 4*s+ms(100), 2).
		refused("a", "e1", 9*s, 1, 2)
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvStalePoll)
	require.Equal(t, Violated, r.Outcome, allText(r))
}

// A blind write is a decision, not a timing: harness lag never excuses it, and a latency on the link too
// small to have cost the lost call its reply does not hide it.
func TestABlindWriteIsNeverExcused(t *testing.T) {
	s := time.Second
	// a's heartbeat at 5 s goes unanswered (it learns so at 5.3 s); at 6 s it writes one again, with no
	// reply to anything since; that one goes unanswered too.
	b := pair(5*s).lostBeat("a", 5*s).lostBeat("a", 6*s).
		fault("f1", "latency", 4*s, 8*s, false, false, "a").withParams("latency", "1ms", "jitter", "0s").
		withLag(history.LagSample{At: 5*s + ms(500), Canary: ms(26)})
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvBlindWrite)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Empty(t, r.Inconclusive)
}

// Lag weighs on a timing finding only when it was measured before the finding's deadline, and only as
// far as Handoffs times it can account for.
func TestLagAfterTheDeadlineExcusesNothing(t *testing.T) {
	s := time.Second
	crash := func() *builder {
		return pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
			takeover("b", 8*s+ms(200))
	}
	// Owed at 8.022 s, deadline 8.123 s, taken over at 8.2 s: 77 ms late.
	// A sample's lateness ends when it was observed: 100 ms observed at 8.4 s covers [8.3 s, 8.4 s].
	r := resultOf(t, Check(crash().withLag(history.LagSample{At: 8*s + ms(400), Canary: ms(100)}).build(), DefaultOptions()), InvFailover)
	require.Equal(t, Violated, r.Outcome, "lag measured after the deadline: %s", allText(r))
	r = resultOf(t, Check(crash().withLag(history.LagSample{At: 7 * s, Canary: ms(200)}).build(), DefaultOptions()), InvFailover)
	require.Equal(t, Inconclusive, r.Outcome, "lag before the deadline that can account for it: %s", allText(r))
	// Taken over at 8.3 s, 177 ms late: 26 ms of lag accounts for four hand-offs of it, 104 ms.
	late := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
		takeover("b", 8*s+ms(300)).withLag(history.LagSample{At: 7 * s, Canary: ms(26)})
	r = resultOf(t, Check(late.build(), DefaultOptions()), InvFailover)
	require.Equal(t, Violated, r.Outcome, "26 ms of lag cannot account for 177 ms: %s", allText(r))
}

// Lag the system's own processes caused (a window in which they used a CPU of the machine's) excuses
// nothing: the system cannot buy its own excuse.
func TestLagTheSystemCausedExcusesNothing(t *testing.T) {
	s := time.Second
	b := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
		takeover("b", 8*s+ms(200)).
		withLag(history.LagSample{At: 7 * s, Canary: ms(200), System: ms(190)})
	b.meta.Lag.CPUs = 2
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvFailover)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Contains(t, allText(r), "the system's own processes used")
}

// A belief must not outlive its holder's value in the key: the reference defect found from outside (a
// release held on the wire, the assignment A → C → A, A believing 2.7 s while Redis held no key of A's)
// is a violation; a holder that could not complete a call meanwhile (stalled) is judged from when it
// could.
func TestABeliefMustNotOutliveItsKey(t *testing.T) {
	s := time.Second
	// a acquires at 0, renews at 1 s; a release of its value lands at 1.5 s (a's own, held on the wire);
	// a re-acquires at 1.6 s but the grant is refused (it believes anyway, as the defect did), and goes on
	// believing until 4.5 s.
	b := newBuilder().life("a", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
		held("a", "e1", ms(2), 1, history.ReasonAcquired, 0).
		op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, s, s+ms(2), true, "").
		op("a", history.OpRelease, "poll:lease:e1", "a:0", 0, s+ms(100), s+ms(500), true, "").
		belief("a", "e1", 4*s+ms(500), false, 1).poll("a", "e1", ms(5), ms(10), 1)
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvStaleBelief)
	require.Equal(t, Violated, r.Outcome, allText(r))
	// Stalled from 1 s to 4 s: it could find out only then; its bound runs from 4 s.
	stalled := newBuilder().life("a", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
		held("a", "e1", ms(2), 1, history.ReasonAcquired, 0).
		op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, s, s+ms(2), true, "").
		fault("f1", "redis-restart", s+ms(400), s+ms(500), false, true).
		fault("f2", "stall", s+ms(100), 4*s, false, false, "a").
		belief("a", "e1", 4*s+ms(500), false, 1).poll("a", "e1", ms(5), ms(10), 1)
	r = resultOf(t, Check(stalled.build(), DefaultOptions()), InvStaleBelief)
	require.NotEqual(t, Violated, r.Outcome, allText(r))
}

// dropPolls removes inst's polls of ep that start in [from, to).
func dropPolls(evs []history.Event, inst, ep string, from, to time.Duration) []history.Event {
	var out []history.Event
	for _, e := range evs {
		if e.Kind == history.KindPoll && e.Instance == inst && e.Endpoint == ep && e.At >= from && e.At < to {
			continue
		}
		out = append(out, e)
	}
	return out
}

// A stale value is its writer's to clear: a late acquire that landed after its writer gave up (held on
// the wire) keeps the key for nobody, and its writer, in the fleet and ready, releases it within the
// detection latency of the landing; a system that leaves it to expire is late. The premise — a write of
// it that may have landed after its writer gave up — failing (the same acquire, answered), the value runs
// out its TTL like any other.
func TestALateWriteIsItsWritersToClear(t *testing.T) {
	s := time.Second
	base := func() *builder {
		return pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
			fault("f2", "slow-requests", 7*s+ms(900), 9*s, false, false, "b").withParams("delay", "1s")
	}
	// b's acquire at 8.05 s is held 1 s, lands at 9.05 s (recorded), after b gave up at 8.35 s: b's value
	// may be in the key until 12.05 s. b, ready again at 9 s + 1.3 s, must clear it by 10.3 s and take e1.
	late := func(b *builder) *builder {
		b.lost("b", history.OpAcquire, "e1", "b:8050", 8*s+ms(50))
		b.events[len(b.events)-1].Op.Landed = 9*s + ms(50)
		return b
	}
	f, _, _ := judge(t, late(base()).takeover("b", 12*s+ms(100)))
	require.Equal(t, Violated, f.Outcome, "left to expire: %s", allText(f))
	f, _, _ = judge(t, late(base()).takeover("b", 10*s+ms(350)))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
}

// The same, where the writer's value comes back in its later holding (an election writes its candidate's
// ID, the same each term): the late write is judged by the writes before the grant that ends the gap,
// not by the later holding's confirmed ones, and leaving it to expire is still late.
func TestALateWriteIsItsWritersToClearEvenWhenItsValueComesBack(t *testing.T) {
	s := time.Second
	build := func(at time.Duration) *builder {
		b := pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
			fault("f2", "slow-requests", 7*s+ms(900), 9*s, false, false, "b").withParams("delay", "1s")
		b.lost("b", history.OpAcquire, "e1", "b", 8*s+ms(50))
		b.events[len(b.events)-1].Op.Landed = 9*s + ms(50)
		b.takeover("b", at)
		for i := range b.events {
			if e := b.events[i]; e.Op != nil && e.Endpoint == "e1" && strings.HasPrefix(e.Op.Owner, "b:") {
				b.events[i].Op.Owner = "b"
			}
		}
		return b
	}
	f, _, _ := judge(t, build(12*s+ms(100)))
	require.Equal(t, Violated, f.Outcome, "left to expire: %s", allText(f))
	require.Contains(t, allText(f), "was stale")
	f, _, _ = judge(t, build(10*s+ms(350)))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
}

// A slowed taker takes what its link costs it, and no more: a latency on the taker's link adds its round
// trip; one on another instance's link adds nothing.
func TestASlowedTakerTakesWhatItsLinkCosts(t *testing.T) {
	s := time.Second
	crash := func(on string) *builder {
		return pair(5*s+ms(500)).fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
			life("c", history.LifeStarted, 0).
			fault("f2", "latency", 7*s, 10*s, false, false, on).withParams("latency", "200ms", "jitter", "50ms")
	}
	// Owed at 8.022 s; b's round trip may cost 250 ms more: deadline 8.373 s.
	f, _, _ := judge(t, crash("b").takeover("b", 8*s+ms(350)))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
	f, _, _ = judge(t, crash("c").takeover("b", 8*s+ms(350)))
	require.Equal(t, Violated, f.Outcome, "the latency was on c, not on the taker: %s", allText(f))
}

// A backend whose calls are not modelled (a PostgreSQL lock) is read off the holder's effects: a
// partitioned holder's lock lasts the backend's dead-peer bound from the cut. Without a fault on the
// holder, its holding ended of itself, and the lock is free within a TTL.
func TestAnUnmodelledBackendIsReadOffTheHoldersEffects(t *testing.T) {
	s := time.Second
	base := func() *builder {
		b := newBuilder().with(func(m *history.Meta) { m.Kind = "election"; m.Timing.DeadPeer = 5 * s }).
			life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			held("a", "role", ms(10), 1, history.ReasonAcquired, 0).polls("a", "role", ms(20), 5*s+ms(500), s, 1).
			belief("a", "role", 6*s, false, 1)
		return b
	}
	takeover := func(b *builder, at time.Duration) *builder {
		return b.held("b", "role", at, 2, history.ReasonAcquired, 0).polls("b", "role", at+ms(5), 20*s, s, 2)
	}
	// Cut off at 5.5 s: the lock lasts until 10.5 s.
	cut := base().fault("f1", "partition", 5*s+ms(500), 15*s, false, false, "a")
	f, _, _ := judge(t, takeover(cut, 10*s+ms(500)))
	require.NotEqual(t, Violated, f.Outcome, allText(f))
	f, _, _ = judge(t, takeover(base().fault("f1", "partition", 5*s+ms(500), 15*s, false, false, "a"), 10*s+ms(700)))
	require.Equal(t, Violated, f.Outcome, allText(f))
	// No fault on a: its holding ended at 6 s of itself, free by 9 s.
	_, l, _ := judge(t, takeover(base(), 9*s+ms(300)))
	require.Equal(t, Violated, l.Outcome, allText(l))
}

// Polls are recorded when they end: one that began less than a poll's duration before the run ended is
// not in the history, and a gap at the end is judged only as far as one would have been.
func TestTheLastPollsOfARunAreNotRequired(t *testing.T) {
	s := time.Second
	b := pair(20 * s).with(func(m *history.Meta) { m.Timing.PollDuration = 2 * s })
	b.events = dropPolls(b.events, "a", "e1", 18*s, 20*s)
	_, l, _ := judge(t, b)
	require.Equal(t, Pass, l.Outcome, "a poll at 18.01 s would end after the run: %s", allText(l))
	b = pair(20 * s).with(func(m *history.Meta) { m.Timing.PollDuration = 2 * s })
	b.events = dropPolls(b.events, "a", "e1", 15*s, 20*s)
	_, l, _ = judge(t, b)
	require.Equal(t, Violated, l.Outcome, allText(l))
}

// A wipe takes out only the keys it reached, and a renewal answered as granted shows its value in the
// key whatever a wipe before it said. a holds e1 to the end, renewing every second (answered granted),
// believing on. Redis restarts empty over [5 s, 5.2 s]: scoped to slots e1's key does not hash to (a
// cluster's other shard), it touches nothing of e1's; unscoped (a restart the cluster failed over from,
// keeping the data), a's renewals granted after it show its value back. Either way a's belief is no
// stale one. The control: the renewals after the wipe refused, and the belief held on regardless, is
// one.
func TestARenewalGrantedAfterAWipeShowsTheValueThere(t *testing.T) {
	s := time.Second
	other := "0-1"
	if HashSlot("poll:lease:e1") <= 1 {
		other = "16000-16383"
	}
	base := func(slots string) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).hold("a", "e1", ms(10), 20*s).
			fault("f1", "redis-restart", 5*s, 5*s+ms(200), false, true)
		if slots != "" {
			b.withParams(ShardSlotsParam, slots)
		}
		return b
	}
	for _, slots := range []string{other, ""} {
		r := resultOf(t, Check(base(slots).build(), DefaultOptions()), InvStaleBelief)
		require.Equal(t, Pass, r.Outcome, "slots %q: %s", slots, allText(r))
	}
	refused := base("")
	for i := range refused.events {
		if e := refused.events[i]; e.Op != nil && e.Op.Kind == history.OpRenew && e.At > 5*s {
			refused.events[i].Op.OK = false
		}
	}
	r := resultOf(t, Check(refused.build(), DefaultOptions()), InvStaleBelief)
	require.Equal(t, Violated, r.Outcome, allText(r))
}

// A release of a value that a later grant set again is taken to end that grant too, unless the history
// shows it did not: a renewal of the value, sent after the release had taken effect, was granted (the
// key held the value then), and no other acquire of the value may have put it back in between. An
// election's value is its candidate ID in every term; its release of an old term, held on the wire,
// landed after the new term's grant and left it alone (explore-election-redis seed 755780851: the
// new term's polls were judged outside any lease). Where the premise fails (the renewal was refused,
// or an acquire of the value came between), the polls are outside the lease.
func TestARenewalShowsALateReleaseLeftTheValue(t *testing.T) {
	s := time.Second
	history := func(renewed, acquiredBetween bool) history.History {
		b := newBuilder().life("a", history.LifeStarted, 0).
			op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, 10*s, 10*s+ms(2), true, "").
			poll("a", "e1", 10*s+ms(10), 10*s+ms(100), 1).
			add(history.Event{Kind: history.KindOp, At: 11 * s, End: history.Infinity, Instance: "a", Endpoint: "e1",
				Op: &history.Op{Kind: history.OpRelease, Key: "poll:lease:e1", Owner: "a", Unknown: true, AbsentOK: true,
					Err: "i/o timeout", GaveUp: 11*s + ms(300), Landed: 12*s + ms(500)}}).
			op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, 12*s, 12*s+ms(2), true, "").
			poll("a", "e1", 12*s+ms(100), 12*s+ms(200), 2).
			poll("a", "e1", 12*s+ms(800), 12*s+ms(900), 2)
		if acquiredBetween {
			b.op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, 12*s+ms(700), 12*s+ms(702), true, "")
		}
		return b.op("a", history.OpRenew, "poll:lease:e1", "a", 3*s, 13*s, 13*s+ms(2), renewed, "").
			poll("a", "e1", 13*s+ms(100), 13*s+ms(200), 2).build()
	}
	r := resultOf(t, Check(history(true, false), DefaultOptions()), InvValidity)
	require.Equal(t, Pass, r.Outcome, allText(r))

	r = resultOf(t, Check(history(false, false), DefaultOptions()), InvValidity)
	require.Equal(t, Violated, r.Outcome, "a refused renewal shows nothing: %s", allText(r))
	r = resultOf(t, Check(history(true, true), DefaultOptions()), InvValidity)
	require.Equal(t, Violated, r.Outcome, "an acquire between may have put the value back: %s", allText(r))
}

// A stale value is its writer's to clear, but only the part of its life that comes from the write that
// may have landed late: what its writes answered before gave it, the writer believed in, and the
// specification's TTL bounds that (explore seed 840546830: a renewal sent into a frozen Redis may have
// landed when it resumed; the next owner took the endpoint at the expiry the last answered renewal had
// set, and was judged late against a clearing deadline 0.37 s before that expiry).
func TestAStaleValueKeepsTheLifeItsAnsweredWritesGaveIt(t *testing.T) {
	s := time.Second
	build := func(at time.Duration) *builder {
		// a's last answered renewal, at 4.01 s, keeps its value until 7.012 s; its renewal at 4.9 s is
		// held and lands at 5.6 s, after a gave up at 5.2 s: the value may be there until 8.6 s. a,
		// answered again from 5.3 s, could clear it by 6.6 s.
		b := pair(4*s+ms(500)).fault("f2", "slow-requests", 4*s+ms(800), 5*s+ms(250), false, false, "a").withParams("delay", "700ms").
			beats("a", 5*s+ms(300), 20*s)
		b.lost("a", history.OpRenew, "e1", "a:10", 4*s+ms(900))
		b.events[len(b.events)-1].Op.Landed = 5*s + ms(600)
		return b.takeover("b", at)
	}
	f, _, _ := judge(t, build(7*s+ms(50)))
	require.NotEqual(t, Violated, f.Outcome, "taken at the expiry the answered writes set: %s", allText(f))
	f, _, _ = judge(t, build(7*s+ms(300)))
	require.Equal(t, Violated, f.Outcome, "past that expiry and the tolerance: %s", allText(f))
	require.Contains(t, allText(f), "was stale")
}
