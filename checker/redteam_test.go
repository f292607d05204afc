package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// Red-team histories: attacks on the model from outside (docs/checker.md). Each test asserts the verdict
// the history deserves. Those marked "was a false pass" or "was a false alarm" each found a gap in the
// model, now closed (the test failed before); those marked "holds" are attacks the model answered
// correctly from the start, kept so that it goes on doing so.
//
// Timing throughout is the builder's (newBuilder): TTL 3 s, renewals and heartbeats every 1 s, call
// bound 300 ms, polls of 100 ms every 1 s, heartbeat TTL 3 s; detection latency D = 1 s + 300 ms =
// 1.3 s; tolerance 101 ms; cadence 1 s + 100 ms + 101 ms = 1.201 s.

// rtPair is the fleet before anything happens: a holds e1 from 10 ms until cut (acquire answered at
// 12 ms, renewals at 1.01 s, 2.01 s, ... answered 2 ms later, polls at 15 ms, 1.015 s, ...), heartbeats
// from 20 ms until cut; b holds e2 from 15 ms and heartbeats from 25 ms, throughout.
func rtPair(cut time.Duration) *builder {
	s := time.Second
	return newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("a", "e1", ms(10), cut).beats("a", ms(20), cut).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s)
}

// rtCrash is rtPair(5.5 s) with a crashed at 5.5 s. a's last renewal (5.01 s, answered 5.012 s) keeps
// e1's key until 8.012 s + the 1 ms tick = 8.013 s; its last heartbeat (5.02 s, answered 5.021 s) counts
// it a member until 8.021 s + 1 ms = 8.022 s: e1 is owed at 8.022 s, deadline 8.123 s.
func rtCrash() *builder {
	s := time.Second
	return rtPair(5*s+ms(500)).
		fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
}

// rtTake adds inst's takeover of e1 at at (acquire at at-5ms answered, renewals, polls from at).
func (b *builder) rtTake(inst string, at time.Duration) *builder {
	return b.hold(inst, "e1", at-ms(5), 20*time.Second)
}

// rtLatency adds a latency fault on inst's link: latency ± jitter.
func (b *builder) rtLatency(id, inst string, from, to time.Duration, latency, jitter string) *builder {
	return b.fault(id, "latency", from, to, false, false, inst).withParams("latency", latency, "jitter", jitter)
}

// rtSlowAnswers makes inst's answered operations called in [from, to) take d, as a latency on its link
// would (the builder answers in 2 ms).
func (b *builder) rtSlowAnswers(inst string, from, to, d time.Duration) *builder {
	for i := range b.events {
		e := &b.events[i]
		if e.Kind == history.KindOp && e.Instance == inst && e.At >= from && e.At < to && e.End != history.Infinity {
			e.End = e.At + d
		}
	}
	return b
}

// rtToken sets the fencing token of inst's polls and beliefs of ep (the builder's hold uses 1).
func (b *builder) rtToken(inst, ep string, token uint64) *builder {
	for i := range b.events {
		e := &b.events[i]
		if e.Instance != inst || e.Endpoint != ep {
			continue
		}
		if e.Poll != nil {
			e.Poll.Token = token
		}
		if e.Belief != nil {
			e.Belief.Token = token
		}
	}
	return b
}

func rtCheck(b *builder) Report { return Check(b.build(), DefaultOptions()) }

// rtDump logs the model's gaps of ep, for the reader of a failing test (go test -v).
func rtDump(t *testing.T, b *builder, ep string) {
	t.Helper()
	m := newModel(newIndex(b.build()))
	for _, g := range m.owed() {
		if g.ep != ep {
			continue
		}
		t.Logf("gap %s %v..%v open=%v late=%v kind=%s deadline=%v\n   %s", g.ep, g.from, g.to, g.open, g.late, g.ob.kind,
			g.ob.deadline, strings.Join(g.ob.why, "\n   "))
		if g.take != nil && g.take.kind != g.ob.kind {
			t.Logf("   takeover deadline=%v\n     %s", g.take.deadline, strings.Join(g.take.why, "\n     "))
		}
	}
}

func rtOutcome(t *testing.T, rep Report, inv string) (Outcome, string) {
	t.Helper()
	r := resultOf(t, rep, inv)
	return r.Outcome, fmt.Sprintf("%s: %s%s", r.Outcome, allText(r), caughtText(r))
}

// ---------------------------------------------------------------------------------------------------
// (A) false passes
// ---------------------------------------------------------------------------------------------------

// Was a false pass. a holds e1 and renews it, answered, every second until the end of the run; it
// polls until 5.5 s and never again. One heartbeat of a's at 5.2 s went unanswered (no fault in the log:
// a lost packet), and a gave up on it at 5.5 s. That single unanswered call "ends a's holding" (the
// cadence stops being owed at 5.5 s), and the takeover that replaces it waits for a's value in the key —
// which a itself keeps renewing, answered, until 19.01 s (alive until 22.01 s): past the run's end. So
// nothing is owed for 14.5 s and liveness passes, though the history proves a held e1 all along (its
// renewals were confirmed at 6.012 s, 7.012 s, ...) and simply stopped polling.
//
// What the model should use: a confirmed renewal (or acquire) by the holder after its impediment shows
// it holds the endpoint again; its cadence is owed from that confirmation (as "new holding" is), so e1
// is owed by 6.012 s + 1.201 s = 7.213 s at the latest.
func TestRedTeamAHolderThatRenewsButStopsPollingAfterOneLostCall(t *testing.T) {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
		beats("a", ms(20), 5*s).lostBeat("a", 5*s+ms(200)).beats("a", 6*s+ms(20), 20*s)
	b.op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, ms(10), ms(12), true, "")
	for at := s + ms(10); at < 20*s; at += s {
		b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
	}
	b.polls("a", "e1", ms(15), 5*s+ms(500), s, 1)
	rtDump(t, b, "e1")
	o, msg := rtOutcome(t, rtCheck(b), InvLiveness)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass, the same blind spot without any lost call: a reports at 5.5 s that it no longer
// holds e1 (a held=false belief, "lost"), yet goes on renewing its value, answered OK, every second to
// the end of the run, and never polls again. The holding "ended" with the belief; the takeover waits for
// a's value, which a keeps alive to 22 s: nothing is owed, nothing is reported, and e1 is kept from
// everyone for 14.5 s by a live instance. (validity and stale-belief have nothing to say: a makes no
// poll, and holds no belief.)
//
// What the history proves: a confirmed renewal is a holding (leases.go gives a a confirmed lease of e1
// through 22 s). A live writer that keeps its value alive owes the endpoint its cadence, or must clear
// it; "its writer believed in it" cannot be taken from the renewals alone once the writer says it
// does not. e1 is owed by 6.012 + 1.201 s = 7.213 s at the latest.
func TestRedTeamAZombieRenewerKeepsTheEndpointFromEveryone(t *testing.T) {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("a", ms(20), 20*s)
	b.op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, ms(10), ms(12), true, "").
		held("a", "e1", ms(12), 1, history.ReasonAcquired, 0)
	for at := s + ms(10); at < 20*s; at += s {
		b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
	}
	b.polls("a", "e1", ms(15), 5*s+ms(500), s, 1)
	b.add(history.Event{Kind: history.KindBelief, At: 5*s + ms(500), Instance: "a", Endpoint: "e1",
		Belief: &history.Belief{Held: false, Token: 1, Reason: "lost"}})
	rtDump(t, b, "e1")
	o, msg := rtOutcome(t, rtCheck(b), InvLiveness)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. Blind writes on a sentinel backend are never judged. The run's topology is
// "sentinel", and nothing fails over: no primary is killed, no replica promoted. a's replies are dropped
// from 4.9 s (a one-way partition); its heartbeat at 5 s goes unanswered (given up at 5.3 s) and it sends
// renewals at 6.01 s and 7.01 s with nothing answered since, both unanswered. blind-write is skipped
// ("a link is judged per node there"), which counts as a pass.
//
// What the history proves: no promotion, no failover fault, no node change lies between the lost call and
// the writes: every call went to the same primary over the same link, exactly as on a single node. The
// premise of the skip (the instance may have switched nodes) can be checked: judge the writes for which
// no promotion or failover fault lies between the lost call and the write.
func TestRedTeamABlindWriteOnASentinelBackendWithoutFailover(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01).with(func(m *history.Meta) { m.Assumptions.Topology = "sentinel" }).
		life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("a", "e1", ms(10), 4*s+ms(500)).beats("a", ms(20), 4*s+ms(500)).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
		fault("f1", "one-way-partition", 4*s+ms(900), 15*s, false, false, "a").
		lostBeat("a", 5*s).lost("a", history.OpRenew, "e1", "a:10", 6*s+ms(10)).lost("a", history.OpRenew, "e1", "a:10", 7*s+ms(10))
	// Control: the same history on a single node is a blind write.
	single := newBuilder().assume(0.01)
	single.events = b.events
	o, msg := rtOutcome(t, rtCheck(single), InvBlindWrite)
	require.Equal(t, Violated, o, msg)
	o, msg = rtOutcome(t, rtCheck(b), InvBlindWrite)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. a crashes at 5.5 s: e1 is owed at 8.022 s (see rtCrash), deadline 8.123 s plus
// the taker's slowed round trip. b, the only other member, is under a latency of 200 ms ± 150 ms from
// 4 s to 19 s: a round trip may cost it 350 ms, more than its 300 ms call bound, and one heartbeat of
// b's (6 s) went unanswered. Every other call of b's in that window — its renewals of e2, its
// heartbeats, each second — was answered. The model takes b's one unanswered call as evidence that b
// was impeded for the whole latency window, [4 s, 19.175 s], so b is "ready" only at 20.475 s and
// nothing is owed for e1 within the run: nobody ever takes it over, and the run passes. (b's answered
// calls in the window take 250 ms each, as the latency makes them.)
//
// What the history proves: b completed a call at 6.265 s (its renewal sent at 6.015 s) and every second
// after; its impediment is at most [6 s, 6.3 s] (the call to its give-up; the next answer ends it), so b
// is ready by 6.3 s + 1.3 s = 7.6 s at the latest. e1 is owed at 8.022 s, and a takeover by b costs at most the
// 350 ms its link adds: deadline 8.022 + 0.35 + 0.101 = 8.473 s. b never took it: a violation.
func TestRedTeamALatencyWithAnsweredCallsDoesNotImpedeTheTakerForItsWholeWindow(t *testing.T) {
	s := time.Second
	base := func(lost bool) *builder {
		b := rtCrash().rtLatency("f2", "b", 4*s, 19*s, "200ms", "150ms").rtSlowAnswers("b", 4*s, 19*s, ms(250))
		if lost {
			b.events = rtDropOps(b.events, "b", "poll:node:b", 5*s+ms(900), 6*s+ms(100))
			b.lostBeat("b", 6*s)
		}
		return b
	}
	// Control: with every call of b's answered, e1 is owed at 8.022 s and its absence is reported.
	o, msg := rtOutcome(t, rtCheck(base(false)), InvFailover)
	require.Equal(t, Violated, o, msg)
	// One unanswered heartbeat of b's at 6 s, and nothing is owed for e1 within the run.
	rtDump(t, base(true), "e1")
	o, msg = rtOutcome(t, rtCheck(base(true)), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass, the same blind spot through the fleet's wait for an assignee (a presence trick).
// a crashes at 5.5 s (e1 owed at 8.022 s). c tried e1 at 7.5 s (refused: a's key lived until 8.013 s), so
// the history shows e1 assigned to c; c never tried again. c is under a latency of 200 ms ± 150 ms over
// [4 s, 19 s]; its heartbeats, answered in 250 ms each second, keep it a member; one of them (6 s) went
// unanswered. The fleet "waits for c until it is ready": the model reads c as impeded for the whole
// window, so until 20.475 s, and b's takeover at 15 s passes.
//
// What the history proves: c completed calls every second from 7.03 s on (and its acquire at 7.5 s was
// answered): it could act all along after 6.3 s. Waiting for an assignee is owed only while it cannot
// act; c could, and did not take e1. e1 was owed at 8.022 s; b's takeover at 15 s is late.
func TestRedTeamAnAssigneeThatCouldActIsNotWaitedFor(t *testing.T) {
	s := time.Second
	b := rtCrash().life("c", history.LifeStarted, 0).beats("c", ms(30), 20*s).
		rtLatency("f2", "c", 4*s, 19*s, "200ms", "150ms").
		op("c", history.OpAcquire, "poll:lease:e1", "c:7500", 3*s, 7*s+ms(500), 7*s+ms(750), false, "").
		rtSlowAnswers("c", 4*s, 19*s, ms(250))
	b.events = rtDropOps(b.events, "c", "poll:node:c", 6*s, 6*s+ms(100))
	b.lostBeat("c", 6*s+ms(30)).rtTake("b", 15*s)
	rtDump(t, b, "e1")
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds, as the model's judgement: a chain of short faults on the only taker. a crashes at 5.5 s (e1 owed
// at 8.022 s). b's link flaps: a 40 ms partition every second, [k+20 ms, k+60 ms], each catching b's
// heartbeat (sent at k+25 ms, given up at k+325 ms); b's renewals (k+15 ms) are answered between the
// blips. Each blip impedes b from the partition to its heartbeat's give-up, and a member is ready only
// once it has been unimpeded for the detection latency (1.3 s): the renewal and call bound a system
// needs to find a free endpoint and act on it. A member whose calls are lost every 1 s cannot be shown
// able to act, since an attempt of its own may meet the next blip, as its heartbeats do. While the
// flapping lasts nothing is owed. Once it stops, the takeover is owed a detection latency after the
// last impediment: with blips over [6 s, 11.06 s], by 11.325 + 1.3 = 12.625 s (deadline 12.726 s).
// b never takes e1 then: a violation. With a blip every 5 s instead, b is ready between them and e1 is
// owed as though nothing happened.
func TestRedTeamAChainOfBlipsOnTheTakerDefersTheTakeoverOnlyWhileItLasts(t *testing.T) {
	s := time.Second
	chain := func(until, every time.Duration) *builder {
		b := rtCrash()
		b.events = rtDropOps(b.events, "b", "poll:node:b", 6*s, 20*s)
		for k := 6 * s; k < 20*s; k += s {
			if k < until && (k-6*s)%every == 0 {
				b.fault(fmt.Sprintf("p%d", k/s), "partition", k+ms(20), k+ms(60), false, false, "b").lostBeat("b", k+ms(25))
			} else {
				b.beats("b", k+ms(25), k+ms(26))
			}
		}
		return b
	}
	r := resultOf(t, rtCheck(chain(20*s, s)), InvFailover)
	require.NotEqual(t, Violated, r.Outcome, "flapping to the run's end: nothing owed: %s", allText(r))
	r = resultOf(t, rtCheck(chain(12*s, s)), InvFailover)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Contains(t, allText(r), "owed at 12.625s")
	r = resultOf(t, rtCheck(chain(20*s, 5*s)), InvFailover)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Contains(t, allText(r), "owed at 8.022s")
}

// rtDropOps removes inst's operations on key called in [from, to).
func rtDropOps(evs []history.Event, inst, key string, from, to time.Duration) []history.Event {
	var out []history.Event
	for _, e := range evs {
		if e.Kind == history.KindOp && e.Instance == inst && e.Op.Key == key && e.At >= from && e.At < to {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Was a false pass. Lag that ended before the fault excuses the takeover. a crashes at 5.5 s; e1 is
// owed at 8.022 s, deadline 8.123 s; b takes it at 9.5 s, 1.377 s late. The only lag of the run was
// observed at 5.2 s: a canary 500 ms late, so the harness was late over [4.7 s, 5.2 s] — before the
// crash, which the harness itself then applied on time at 5.5 s. lagBefore looks for lag from a lag
// window before the gap's start (a's last valid poll, 5.015 s) to the deadline, so this sample counts,
// and 4 × 500 ms = 2 s "accounts for" 1.377 s: failover is inconclusive.
//
// What the history proves: nothing the takeover depended on (the crash, a's key and heartbeat expiring
// at 8.013 s and 8.022 s, b's timer, its acquire, its poll) happened before 5.5 s; from 5.3 s on no
// window of the run lagged by even the floor (10 ms). Lag can only delay what was under way while it
// lasted: a lateness must overlap the stretch in which the takeover was under way — from the fault it
// is measured from (5.5 s) to its deadline (8.123 s) — to excuse anything. The takeover is a violation.
func TestRedTeamLagBeforeTheFaultExcusesNothing(t *testing.T) {
	s := time.Second
	b := rtCrash().rtTake("b", 9*s+ms(500)).withLag(history.LagSample{At: 5*s + ms(200), Canary: ms(500)})
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. One late window excuses four times its lateness, however punctual the harness
// was afterwards. a crashes at 5.5 s; e1 owed at 8.022 s, deadline 8.123 s. The harness was late once: a
// canary observed 500 ms late at 8.1 s (late over [7.6 s, 8.1 s], covering the moment e1 was owed). No
// other window of the run's 200 reached the 10 ms floor. b takes e1 at 10 s, 1.877 s late; Handoffs ×
// 500 ms = 2 s, so failover is inconclusive.
//
// What the history proves: the harness stalled until 8.1 s and ran within 10 ms of time in every window
// after (Lag.Samples lists every window that reached the floor). A taker held up by that stall acts by
// 8.1 s, and its four hand-offs after it each cost under 10 ms: the poll is due by 8.1 s + the tolerance,
// 8.201 s, at the very most. The lag that can account for an overrun is the lateness measured between
// the moment the poll was owed and the poll — here 500 ms of it at most, never 2 s — so 1.877 s over is
// a violation.
func TestRedTeamOneLateWindowDoesNotExcuseFourTimesItself(t *testing.T) {
	s := time.Second
	b := rtCrash().rtTake("b", 10*s).withLag(history.LagSample{At: 8*s + ms(100), Canary: ms(500)})
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. Lag the system caused, observed in a window it did not starve. A process system's
// own processes used a whole CPU's worth (100 ms of a 100 ms window, on a 2-CPU machine) in the windows
// at 6.8 s and 6.9 s (kept for a scheduler lag of 11 ms, below the 25 ms threshold). The canary that
// those windows delayed woke at 7.0 s, 200 ms late — attributed, as the history's Lag says, to the
// window in which it was observed (7.0 s), in which the system used nothing. a crashes at 5.5 s, e1 is
// owed at 8.022 s, deadline 8.123 s; b takes it at 8.5 s, 377 ms late, and 4 × 200 ms = 800 ms makes
// failover inconclusive.
//
// What the history proves: the lateness covered [6.8 s, 7.0 s] (history.LagSample: "the lateness itself
// covered [observed-value, observed]"), exactly the windows the system starved. systemStarved looks only
// at the window of the observation. The model should charge a lag to the system when the system
// starved any window the lateness covered. (Whether lag at 7 s may excuse a takeover owed at 8.022 s at
// all is TestRedTeamLagBeforeTheFaultExcusesNothing's question; here the lag is the system's own.)
func TestRedTeamLagTheSystemCausedInTheWindowsItCovered(t *testing.T) {
	s := time.Second
	b := rtCrash().rtTake("b", 8*s+ms(500)).withLag(
		history.LagSample{At: 6*s + ms(800), Sched: ms(11), System: ms(100)},
		history.LagSample{At: 6*s + ms(900), Sched: ms(11), System: ms(100)},
		history.LagSample{At: 7 * s, Canary: ms(200)})
	b.meta.Lag.CPUs = 2
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. A belief outlives its key by 10 s behind a latency window. a acquires e1 at 0 and
// renews it at 1 s and 2 s, then stops renewing (the defect) but goes on believing, with no deadline,
// until 15 s; it stops polling at 2.5 s, so only stale-belief can see it. A latency of 200 ms ± 150 ms
// lies on a's link over [1 s, 16 s]: a's calls take 250 ms, and one heartbeat (3 s) went unanswered.
// a's value: the renewal sent at 2 s, answered at 2.25 s, keeps it at most until 5.25 s + 1 ms. From
// then no value of a's may be in the key; a may believe for the bound (1 s + 300 ms + 101 ms = 1.401 s)
// after it can find out. readyWithin takes the one unanswered heartbeat as impeding a for the whole
// latency window, to 16.175 s, so the bound runs from past the belief's end and nothing is reported.
//
// What the history proves: a's heartbeats sent at 6 s, 7 s, ... 14 s were answered (at 6.25 s, ...): it
// could complete calls all along, bar [3 s, 3.3 s]. Its bound runs from 5.251 s: it believed 15 −
// 5.251 − 1.401 = 8.348 s too long. A violation.
func TestRedTeamABeliefOutlivesItsKeyBehindALatencyWindow(t *testing.T) {
	s := time.Second
	base := func(lost bool) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).
			op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
			held("a", "e1", ms(2), 1, history.ReasonAcquired, 0).
			op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, s, s+ms(250), true, "").
			op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, 2*s, 2*s+ms(250), true, "").
			polls("a", "e1", ms(5), 2*s+ms(500), s, 1).
			beats("a", ms(20), 3*s).beats("a", 4*s+ms(20), 20*s)
		if lost {
			b.lostBeat("a", 3*s+ms(20))
		} else {
			b.beats("a", 3*s+ms(20), 3*s+ms(21))
		}
		return b.rtLatency("f1", "a", s, 16*s, "200ms", "150ms").rtSlowAnswers("a", s, 16*s, ms(250)).
			belief("a", "e1", 15*s, false, 1)
	}
	// Control: with every call answered, the overstay is reported.
	o, msg := rtOutcome(t, rtCheck(base(false)), InvStaleBelief)
	require.Equal(t, Violated, o, msg)
	// One unanswered heartbeat at 3 s hides all of it.
	o, msg = rtOutcome(t, rtCheck(base(true)), InvStaleBelief)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. A 1 ms pause hides a blind write. a's replies are dropped from 4.9 s (a one-way
// partition to 15 s). Its heartbeat at 5.0 s and renewal at 5.01 s go unanswered (given up at 5.3 s and
// 5.31 s). A pause of 1 ms took hold at 5.0 s (paused 5.0 s, resumed 5.001 s; pauses declared outside
// the assumptions). At 6.01 s and 6.02 s a sends a renewal and a heartbeat anyway, with nothing answered
// since 5.0 s, and gets no reply; it crashes at 6.5 s. Both lost calls overlap the pause widened by a
// call bound ([5.0 s, 5.301 s]), so blind-write sets both aside ("timed out because the instance could
// not run") and finds no blind write.
//
// What the history proves: a was frozen for 1 ms; a reply held by the pause is handed over on waking,
// at 5.001 s, long before either call's deadline (5.3 s, 5.31 s). A pause explains a call's timeout only
// when it lasted until the call's give-up (or so near it that the reply could not be read in time):
// these calls were lost on the link, a knew so by 5.31 s, and its writes at 6.01 s and 6.02 s (sent
// more than a call bound and the tolerance later, 6.01 ≥ 5.31 + 0.401) were blind.
func TestRedTeamABlindWriteHidesBehindAOneMillisecondPause(t *testing.T) {
	s := time.Second
	base := func(pause bool) *builder {
		b := newBuilder().assume(0.01, "pause").life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 4*s+ms(500)).beats("a", ms(20), 4*s+ms(500)).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
			fault("f1", "one-way-partition", 4*s+ms(900), 15*s, false, false, "a").
			lostBeat("a", 5*s).lost("a", history.OpRenew, "e1", "a:10", 5*s+ms(10)).
			lost("a", history.OpRenew, "e1", "a:10", 6*s+ms(10)).lostBeat("a", 6*s+ms(20)).
			fault("f3", "crash", 6*s+ms(500), 6*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 6*s+ms(500))
		if pause {
			b.fault("f2", "pause", 5*s, 5*s+ms(1), false, false, "a").
				life("a", history.LifePaused, 5*s).life("a", history.LifeResumed, 5*s+ms(1))
		}
		return b
	}
	// Control: without the pause, the writes at 6.01 s and 6.02 s are blind.
	o, msg := rtOutcome(t, rtCheck(base(false)), InvBlindWrite)
	require.Equal(t, Violated, o, msg)
	o, msg = rtOutcome(t, rtCheck(base(true)), InvBlindWrite)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. A pause that never took hold explains a stale poll by its scheduled length. A
// pause of a is scheduled over [1 s, 2.9 s]; it takes hold at a's next poll or after two poll intervals
// (sim's Freeze), and a neither polled nor reached 2 s of it, so it never did: the history has no
// "paused" lifecycle event, and a's heartbeats at 1.02 s and 2.02 s were answered. a's lease (acquired at
// 0, never renewed) ends at 3 s × 0.99 = 2.97 s; b acquires e1 at 3.5 s (token 2) and polls; a polls at
// 4.5 s with token 1 and is refused: 1.53 s stale. outside.reach falls back on the fault's window when no
// pause took hold (d = end − start = 1.9 s), so the 1.53 s is "explained" and the stale poll is caught.
//
// What the history proves: a ran throughout (no pause event, calls answered); the docs' premise for this
// allowance is "a pause that took hold", and its magnitude is how long it held. A pause that never took
// hold explains nothing: the stale poll is a violation.
func TestRedTeamAPauseThatNeverTookHoldExplainsNothing(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01, "pause").with(func(m *history.Meta) { m.Fencing = true }).
		life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
		poll("a", "e1", ms(5), ms(100), 1).beats("a", ms(20), 20*s).beats("b", ms(25), 20*s).
		fault("f1", "pause", s, 2*s+ms(900), false, false, "a").
		op("b", history.OpAcquire, "poll:lease:e1", "b:3500", 3*s, 3*s+ms(500), 3*s+ms(502), true, "").
		poll("b", "e1", 3*s+ms(505), 3*s+ms(600), 2).
		refused("a", "e1", 4*s+ms(500), 1, 2)
	o, msg := rtOutcome(t, rtCheck(b), InvStalePoll)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. A data loss declared outside the assumptions explains a belief overlap of any
// length, as long as the overlap begins inside the loss's stretch. Sentinel topology, primary-kill
// declared outside. a holds e1 (acquired at 0, renewed at 1 s and 2 s). The primary is killed at 2.5 s and
// a replica promoted at 3 s without a's key (its last writes were not replicated): a's renewal at 3.01 s
// is refused. a goes on believing, with no deadline, until 15 s (it polls no more). b acquires e1 at 5 s
// on the new primary (token 2) and believes from then on. Both believe over [5 s, 15 s]: 10 s. The loss
// "lets its holder believe for at most a TTL after the loss" (docs): until 3 s + 3 s = 6 s. reach gives a
// backend fault an infinite magnitude over [2.5 s, 6 s], and explains() only asks that the overlap meet
// that stretch, so the whole 10 s is caught — as is a's 12 s stale belief.
//
// What the model should do: an outside fault explains a finding only within its stretch; what lies
// beyond it (here [6 s, 15 s] of the overlap, and a's belief past 6 s + the stale-belief bound) is a
// violation.
func TestRedTeamAnOutsideLossExplainsOnlyWithinItsStretch(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01, "primary-kill").with(func(m *history.Meta) { m.Assumptions.Topology = "sentinel" }).
		life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
		held("a", "e1", ms(2), 1, history.ReasonAcquired, 0).poll("a", "e1", ms(5), ms(100), 1).
		op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, s, s+ms(2), true, "").poll("a", "e1", s+ms(5), s+ms(100), 1).
		op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, 2*s, 2*s+ms(2), true, "").poll("a", "e1", 2*s+ms(5), 2*s+ms(100), 1).
		fault("f1", "primary-kill", 2*s+ms(500), 2*s+ms(500), false, false).
		note(history.NotePromotion+"redis-0 -> redis-1", 3*s).
		op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, 3*s+ms(10), 3*s+ms(12), false, "").
		op("b", history.OpAcquire, "poll:lease:e1", "b:5000", 3*s, 5*s, 5*s+ms(2), true, "").
		held("b", "e1", 5*s+ms(2), 2, history.ReasonAcquired, 0).
		belief("a", "e1", 15*s, false, 1)
	for at := 6 * s; at < 20*s; at += s {
		b.op("b", history.OpRenew, "poll:lease:e1", "b:5000", 3*s, at, at+ms(2), true, "")
	}
	b.polls("b", "e1", 5*s+ms(5), 20*s, s, 2)
	rep := rtCheck(b)
	o, msg := rtOutcome(t, rep, InvSingleHolder)
	require.Equal(t, Violated, o, msg)
	o, msg = rtOutcome(t, rep, InvStaleBelief)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass, the same stretch test from the other side: an outside data loss explains a stale
// poll that began to be stale before the loss. Sentinel topology, primary-kill declared outside, fencing
// on. a acquires e1 at 0 and never renews: its lease ends at 2.97 s, its key at 3.001 s. b acquires e1 at
// 3.2 s (token 2), renews every second (4.195 s, then 5.195 s, ...) and polls. The primary is killed at
// 4.2 s and a replica promoted at 4.7 s (b's holding survives). a polls at 5.9 s with token 1 and is
// refused: 2.93 s past its lease. The loss's stretch is [4.2 s, 4.7 s + 3 s]; it meets the poll, and a
// backend fault's magnitude is infinite, so the stale poll is caught.
//
// What the history proves: a's lease, and its key, ended at 3 s, 1.2 s before the primary was killed;
// no write of a's was lost (it wrote nothing after 0 s, and its key had expired before the kill). A loss
// "lets its holder believe for at most a TTL after the loss" — a holder whose lease the loss shortened. a
// was stale before the loss; the stale poll is a violation.
func TestRedTeamAnOutsideLossDoesNotExplainStalenessThatBeganBeforeIt(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01, "primary-kill").with(func(m *history.Meta) {
		m.Assumptions.Topology = "sentinel"
		m.Fencing = true
	}).
		life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").poll("a", "e1", ms(5), ms(100), 1).
		hold("b", "e1", 3*s+ms(200), 20*s).rtToken("b", "e1", 2).
		fault("f1", "primary-kill", 4*s+ms(200), 4*s+ms(200), false, false).
		note(history.NotePromotion+"redis-0 -> redis-1", 4*s+ms(700)).
		refused("a", "e1", 5*s+ms(900), 1, 2)
	o, msg := rtOutcome(t, rtCheck(b), InvStalePoll)
	require.Equal(t, Violated, o, msg)
}

// Was a false pass. A reply held by a stall is taken for a request that landed late. a holds e1
// (renewals at k s + 10 ms, the last answered at 5.012 s; heartbeats to 5.02 s). Its calls are stalled
// from 5.5 s to 15.5 s (a stall is inside the assumptions). A renewal a sent at 5.499 s — before the
// stall — reached Redis at once (no fault on a's link), but its reply was held until the stall ended
// (chaos.Stall: "a call already sent when the stall begins has its reply held"): it is recorded
// answered OK over [5.499 s, 15.5 s]. Calls a makes during the stall block before they are sent. So e1's
// key holds a's value until 5.499 + 3 s + 1 ms = 8.5 s, and the others count a a member until then (its
// last write landed at 5.5 s at the latest): e1 is owed at 8.5 s; b may take it by 8.6 s (plus a
// hand-off, if the landing is allowed one). The model lands the answered renewal at its reply (15.5 s):
// the key "may hold" a's value until 11.014 s, a is "present" until 18.5 s and, impeded by the stall,
// "ready" at 16.8 s, so the fleet waits for a until 16.8 s and b's takeover at 12 s passes.
//
// What the history proves: the renewal was sent at 5.499 s; a request is never held by a stall or a
// pause (only replies are), and no fault delayed a's requests: it landed by 5.499 s plus a hand-off.
// The latest landing of an answered request is its send plus its link's request delay, not its reply.
func TestRedTeamAReplyHeldByAStallIsNotALateLanding(t *testing.T) {
	s := time.Second
	b := rtPair(5*s+ms(500)).
		op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, 5*s+ms(499), 15*s+ms(500), true, "").
		fault("f1", "stall", 5*s+ms(500), 15*s+ms(500), false, false, "a").
		polls("a", "e1", 6*s+ms(15), 7*s+ms(500), s, 1).
		rtTake("b", 12*s)
	// a's clock and polls run on: it polls at 6.015 s and 7.015 s and its belief lapses at its deadline
	// (5.01 + 2.97 = 7.98 s); the stale renewal's reply at 15.5 s is past its own validity (5.499 s +
	// 2.97 s), so a does not believe again.
	rtDump(t, b, "e1")
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// (B) false alarms
// ---------------------------------------------------------------------------------------------------

// Was a false alarm. A graceful stop while cut off. a is partitioned from 4.9 s to 15 s: its renewal
// at 5.01 s and heartbeat at 5.02 s are dropped (sent more than the 25 ms allowance into the
// partition) and given up at 5.31 s / 5.32 s. a is stopped at 5.5 s; it sends its release at 5.6 s —
// dropped too, given up at 5.9 s — and its departure announcement cannot reach Redis either. The key
// keeps a's value until its last landed write expires: the renewal sent at 4.01 s, answered at
// 4.012 s, until 7.012 s + 1 ms = 7.013 s; the fleet counts a until its last landed heartbeat (4.02 s,
// answered 4.021 s) runs out, 7.022 s. b, correct, takes e1 at 7.05 s: owed at 7.022 s, within the
// deadline 7.123 s. The model treats any graceful stop as releasing "within its poll in flight and its
// link's delay" (releaseBy: 5.6 s) whether or not the release could land, and as announcing its
// departure (presenceEnd), so it owes e1 at 5.6 s and reports b's takeover as 1.35 s late.
//
// What the history proves: the release was sent into a partition that drops every request (it never
// lands: effects.dropped), and so was everything a sent after 4.925 s. A stopped writer clears its value
// only through a release that can land; otherwise the value runs out its TTL, as a crashed writer's
// does.
func TestRedTeamAGracefulStopWhileCutOffCannotRelease(t *testing.T) {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("a", "e1", ms(10), 4*s+ms(900)).beats("a", ms(20), 4*s+ms(900)).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
		fault("f1", "partition", 4*s+ms(900), 15*s, false, false, "a").
		lost("a", history.OpRenew, "e1", "a:10", 5*s+ms(10)).lostBeat("a", 5*s+ms(20)).
		poll("a", "e1", 5*s+ms(15), 5*s+ms(115), 1).
		fault("f2", "stop", 5*s+ms(500), 5*s+ms(900), true, false, "a").
		lost("a", history.OpRelease, "e1", "a:10", 5*s+ms(600)).
		life("a", history.LifeStopped, 5*s+ms(900)).
		rtTake("b", 7*s+ms(50))
	rtDump(t, b, "e1")
	rep := rtCheck(b)
	o, msg := rtOutcome(t, rep, InvFailover)
	require.NotEqual(t, Violated, o, msg)
	o, msg = rtOutcome(t, rep, InvLiveness)
	require.NotEqual(t, Violated, o, msg)
}

// Was a false alarm. A restore from a snapshot, after which the holder renews the restored value. a
// holds e1 throughout, renewing every second (k s + 10 ms, answered 2 ms later) and believing with a
// deadline each renewal moves. Redis is restarted from a snapshot: snapshot at 6 s, restart at 6.2 s. The
// snapshot held a's value with the expiry a's renewal at 5.01 s gave it, 8.012 s; a's renewal at 6.01 s
// (after the snapshot) is lost with the restart, but its renewals at 7.01 s, 8.01 s, ... find a's value
// back and extend it: they are answered OK, which a renewal of a value the key does not hold cannot be.
// The record brings back what the snapshot held "with its expiry then", using only the renewals sent
// before the snapshot, and never lets a later renewal extend it: a's value dies at 8.013 s in the model,
// and a's belief, confirmed by answered renewals every second to the end of the run, is reported to
// outlive its key by more than 10 s.
//
// What the history proves: a renewal answered OK at 7.012 s shows the key held a's value then (the
// conditional renewal compares the owner), and extends it a TTL. Renewals that land while a restored
// value lives extend it, like any other. (The scenarios run this fault with a step longer than the TTL,
// after which no lease survives the restore; the record, and the docs, handle a short step, and
// linearizability reports this history too, since it models the restore as a wipe.)
func TestRedTeamARestoredValueIsExtendedByLaterRenewals(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01).life("a", history.LifeStarted, 0).
		hold("a", "e1", ms(10), 20*s).beats("a", ms(20), 20*s).
		fault("f1", "redis-restart-from-snapshot", 6*s, 6*s+ms(200), false, true)
	o, msg := rtOutcome(t, rtCheck(b), InvStaleBelief)
	require.NotEqual(t, Violated, o, msg)
}

// Was a false alarm. A Redis restart (empty) while a takeover is under way. a crashes at 5.5 s; e1 is
// owed at 8.022 s, deadline 8.123 s. Redis restarts empty over [8.05 s, 8.25 s]. b's acquire, sent at
// 8.06 s — 38 ms after e1 was owed, well within the tolerance's four hand-offs — meets the downed server:
// connection refused, no reply. A correct b now knows Redis lost its data; it may grant nothing for a TTL
// after it can learn of the loss: 8.25 + 1.3 + 3 = 12.55 s. b re-acquires at 12.6 s (deadline 12.651 s).
// The model evaluates the guard, and b's readiness, at the moment e1 was owed (8.022 s): the restart began
// after it (guardAt's from <= t), and b's impediment too (ready ignores spans that begin after t), so
// both move nothing, and b's correct takeover is reported 4.5 s late.
//
// What the history proves: the data loss began before the deadline, and b's own acquire, sent inside
// the tolerance, went unanswered because of it. The docs' premise for a guard is a loss "before the
// deadline it would move" — not before the instant the poll was owed. A takeover at 12.6 s is in time;
// one at 12.7 s is late (the second assertion holds already).
func TestRedTeamARedisRestartDuringATakeover(t *testing.T) {
	s := time.Second
	base := func() *builder {
		b := rtCrash().fault("f2", "redis-restart", 8*s+ms(50), 8*s+ms(250), false, true)
		// The wipe takes b's e2 too: its renewal at 9.015 s is refused, it stops, and takes e2 again
		// when the guard ends, with e1.
		var kept []history.Event
		for _, e := range b.events {
			if e.Instance == "b" && e.Endpoint == "e2" && e.At >= 8*s+ms(50) {
				continue
			}
			kept = append(kept, e)
		}
		b.events = kept
		b.op("b", history.OpRenew, "poll:lease:e2", "b:15", 3*s, 9*s+ms(15), 9*s+ms(17), false, "").
			belief("b", "e2", 9*s+ms(17), false, 1).hold("b", "e2", 12*s+ms(600), 20*s)
		b.add(history.Event{Kind: history.KindOp, At: 8*s + ms(60), End: history.Infinity, Instance: "b", Endpoint: "e1",
			Op: &history.Op{Kind: history.OpAcquire, Key: "poll:lease:e1", Owner: "b:8060", TTL: 3 * s, Unknown: true,
				Err: "dial tcp 127.0.0.1:6379: connect: connection refused", GaveUp: 8*s + ms(61)}})
		return b
	}
	o, msg := rtOutcome(t, rtCheck(base().rtTake("b", 12*s+ms(600))), InvFailover)
	require.NotEqual(t, Violated, o, msg)
	o, msg = rtOutcome(t, rtCheck(base().rtTake("b", 12*s+ms(700))), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// attacks that hold
// ---------------------------------------------------------------------------------------------------

// holds. An instance without any lease polls between a real holder's polls: validity reports it, it
// ends no gap, and single-poller sees the overlap. c never asked for e1 and polls it at 3.5 s; a (with
// an expired lease: its only acquire at 0 gave it 2.97 s) polls at 6.5 s, between b's polls.
func TestRedTeamPollsWithoutALeaseAmongAHoldersPolls(t *testing.T) {
	s := time.Second
	b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").poll("a", "e1", ms(5), ms(100), 1).
		hold("b", "e1", 3*s+ms(100), 20*s).
		poll("c", "e1", 3*s+ms(550), 3*s+ms(650), 0).
		poll("a", "e1", 6*s+ms(150), 6*s+ms(250), 1)
	rep := rtCheck(b)
	r := resultOf(t, rep, InvValidity)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Len(t, r.Violations, 2, allText(r))
	o, msg := rtOutcome(t, rep, InvSinglePoller)
	require.Equal(t, Violated, o, msg)
}

// holds. A takeover far past the key's expiry after a crash, behind a fault on an instance that is
// neither the holder nor the taker nor one that tried the endpoint: c is partitioned, paused, crashed,
// slowed or blinded (with an unanswered call of its own, where the fault leaves one) around the time e1
// is owed. e1 is owed at 8.022 s (rtCrash), deadline 8.123 s; b takes it at 12 s: late every time, since
// someoneReady takes the first ready member (b) and c was never assigned e1 in the history.
func TestRedTeamALateTakeoverBehindAFaultOnAnUnrelatedInstance(t *testing.T) {
	s := time.Second
	faults := map[string]func(b *builder) *builder{
		"partition": func(b *builder) *builder {
			return b.fault("f2", "partition", 6*s, 14*s, false, false, "c").lostBeat("c", 6*s+ms(30))
		},
		"one-way": func(b *builder) *builder {
			return b.fault("f2", "one-way-partition", 6*s, 14*s, false, false, "c").lostBeat("c", 6*s+ms(30))
		},
		"latency": func(b *builder) *builder {
			return b.rtLatency("f2", "c", 6*s, 14*s, "400ms", "0s").lostBeat("c", 6*s+ms(30))
		},
		"pause": func(b *builder) *builder {
			return b.fault("f2", "pause", 6*s, 14*s, false, false, "c").life("c", history.LifePaused, 6*s+ms(40)).
				life("c", history.LifeResumed, 14*s)
		},
		"crash": func(b *builder) *builder {
			return b.fault("f2", "crash", 7*s+ms(950), 7*s+ms(950), true, false, "c").life("c", history.LifeCrashed, 7*s+ms(950))
		},
		"stall": func(b *builder) *builder { return b.fault("f2", "stall", 6*s, 14*s, false, false, "c") },
	}
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			b := rtCrash().life("c", history.LifeStarted, 0).beats("c", ms(30), 6*s)
			o, msg := rtOutcome(t, rtCheck(f(b).rtTake("b", 12*s)), InvFailover)
			require.Equal(t, Violated, o, msg)
		})
	}
}

// holds. Data losses far from the takeover move nothing: a promotion at 1 s (guard until 1 + 1.3 + 3 =
// 5.3 s), a Redis restart [2 s, 2.2 s] (guard until 6.5 s), both over before e1 is owed at 8.022 s; a
// promotion at 8.5 s comes after the deadline 8.123 s. b takes e1 at 10 s: late.
func TestRedTeamDataLossesFarFromTheTakeoverMoveNothing(t *testing.T) {
	s := time.Second
	for name, f := range map[string]func(b *builder) *builder{
		"early promotion": func(b *builder) *builder { return b.note(history.NotePromotion+"redis-0 -> redis-1", s) },
		"early restart":   func(b *builder) *builder { return b.fault("f2", "redis-restart", 2*s, 2*s+ms(200), false, true) },
		"late promotion":  func(b *builder) *builder { return b.note(history.NotePromotion+"redis-0 -> redis-1", 8*s+ms(500)) },
	} {
		t.Run(name, func(t *testing.T) {
			o, msg := rtOutcome(t, rtCheck(f(rtCrash()).rtTake("b", 10*s)), InvFailover)
			require.Equal(t, Violated, o, msg)
		})
	}
}

// holds. An acquire of e1 that c sent long before the holding ended shows no assignment: c tried e1 at
// 2 s (refused: a held it), crashed at 4.95 s, and its heartbeat ran out at 7.03 s, before a's (8.022 s),
// when e1 was assigned afresh: c was no member then. The fleet does not wait for c; b's takeover at 10 s
// is late (deadline 8.123 s). (Had c's heartbeat outlived a's, c would have been a member the others
// counted on when e1 moved, and its assignee for all they knew: TestTheFleetWaitsOnlyForAnAssigneeTheHistoryShows.)
func TestRedTeamAnAcquireLongAgoAssignsNothing(t *testing.T) {
	s := time.Second
	b := rtCrash().life("c", history.LifeStarted, 0).beats("c", ms(30), 4*s+ms(950)).
		op("c", history.OpAcquire, "poll:lease:e1", "c:2000", 3*s, 2*s, 2*s+ms(2), false, "").
		fault("f2", "crash", 4*s+ms(950), 4*s+ms(950), true, false, "c").life("c", history.LifeCrashed, 4*s+ms(950)).
		rtTake("b", 10*s)
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A taker that joined late is no excuse: c starts at 15 s and takes e1 at 16 s; b was ready all
// along. e1 is owed at 8.022 s (c, not yet a member, counted by nobody), deadline 8.123 s.
func TestRedTeamALateJoinerIsNoExcuse(t *testing.T) {
	s := time.Second
	b := rtCrash().life("c", history.LifeStarted, 15*s).beats("c", 15*s+ms(30), 20*s).rtTake("c", 16*s)
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A correct takeover at the key's expiry: e1's key holds a's value until 8.013 s and a's heartbeat
// counts it until 8.022 s; b acquires at 8.017 s and polls at 8.022 s, and at the edge of the deadline,
// 8.121 s. Both pass; 8.125 s is late.
func TestRedTeamATakeoverAtTheKeysExpiry(t *testing.T) {
	s := time.Second
	for _, at := range []time.Duration{8*s + ms(22), 8*s + ms(121)} {
		o, msg := rtOutcome(t, rtCheck(rtCrash().rtTake("b", at)), InvFailover)
		require.Equal(t, Pass, o, "%v: %s", at, msg)
	}
	o, msg := rtOutcome(t, rtCheck(rtCrash().rtTake("b", 8*s+ms(125))), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A blind write is not hidden by harness lag, nor by a heartbeat answered before the lost call:
// a's heartbeat at 5 s goes unanswered (no fault), its renewal at 6 s too, with nothing answered since.
func TestRedTeamABlindWriteBehindLag(t *testing.T) {
	s := time.Second
	b := rtPair(5*s).lostBeat("a", 5*s).lost("a", history.OpRenew, "e1", "a:10", 6*s).
		withLag(history.LagSample{At: 5*s + ms(500), Canary: ms(900)})
	r := resultOf(t, rtCheck(b), InvBlindWrite)
	require.Equal(t, Violated, r.Outcome, allText(r))
}

// holds. A graceful stop that releases another endpoint, not the one it held, is reported: a holds e1
// and e3, releases only e3 when stopped at 5.5 s.
func TestRedTeamAStopThatReleasesTheWrongEndpoint(t *testing.T) {
	s := time.Second
	b := rtPair(5*s+ms(500)).hold("a", "e3", ms(12), 5*s+ms(500)).
		fault("f1", "stop", 5*s+ms(500), 5*s+ms(600), true, false, "a").
		release("a", "e3", "a:12", 5*s+ms(600)).life("a", history.LifeStopped, 5*s+ms(610)).
		rtTake("b", 8*s+ms(50)).hold("b", "e3", 5*s+ms(650), 20*s)
	r := resultOf(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Contains(t, allText(r), "sent no release of it")
}

// holds. A process pause outside the assumptions, handled correctly: a is paused over [5.5 s, 9.5 s]
// (taking hold at 5.5 s); its key (renewed at 5.01 s) expires at 8.013 s, and its heartbeat counts it
// until 8.022 s; b takes e1 at 8.05 s with token 2. a wakes at 9.5 s and its prepared poll, token 1, is
// refused: 1.53 s past its lease (5.01 + 2.97 = 7.98 s), which the 4 s pause explains: caught.
func TestRedTeamAPauseOutsideTheAssumptions(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01, "pause").with(func(m *history.Meta) { m.Fencing = true }).
		life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 5*s+ms(500)).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
		fault("f1", "pause", 5*s+ms(500), 9*s+ms(500), false, false, "a").
		life("a", history.LifePaused, 5*s+ms(500)).life("a", history.LifeResumed, 9*s+ms(500)).
		refused("a", "e1", 9*s+ms(510), 1, 2).
		op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, 9*s+ms(520), 9*s+ms(522), false, "").
		belief("a", "e1", 9*s+ms(523), false, 1).
		op("b", history.OpAcquire, "poll:lease:e1", "b:8045", 3*s, 8*s+ms(45), 8*s+ms(47), true, "").
		held("b", "e1", 8*s+ms(47), 2, history.ReasonAcquired, 8*s+ms(45)+ms(2970))
	for at := 9*s + ms(45); at < 20*s; at += s {
		b.op("b", history.OpRenew, "poll:lease:e1", "b:8045", 3*s, at, at+ms(2), true, "").
			held("b", "e1", at+ms(2), 2, history.ReasonRenewed, at+ms(2970))
	}
	b.polls("b", "e1", 8*s+ms(50), 20*s, s, 2)
	rep := rtCheck(b)
	for _, r := range rep.Results {
		require.NotEqual(t, Violated, r.Outcome, "%s: %s", r.Invariant, allText(r))
	}
	require.Equal(t, Caught, resultOf(t, rep, InvStalePoll).Outcome)
}

// holds. A poll cut short at the holder's own deadline, stamped one scheduling allowance late: a's lease
// (acquire at 0, drift bound 0.01) runs to 2.97 s; its poll from 2.9 s is cancelled at 2.97 s and the
// harness stamps the end at 2.995 s, within the slack TTL × drift = 30 ms. Validity passes.
func TestRedTeamAPollCutShortAtTheDeadline(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01).life("a", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
		poll("a", "e1", ms(5), ms(100), 1).poll("a", "e1", s, s+ms(100), 1).poll("a", "e1", 2*s, 2*s+ms(100), 1)
	b.add(history.Event{Kind: history.KindPoll, At: 2*s + ms(900), End: 2*s + ms(995), Instance: "a", Endpoint: "e1",
		Poll: &history.Poll{Token: 1, Outcome: history.PollCancelled}})
	o, msg := rtOutcome(t, rtCheck(b), InvValidity)
	require.Equal(t, Pass, o, msg)
}

// holds. A promotion followed by a second promotion, with correct behaviour. Sentinel topology. a crashes
// at 5.5 s. Replicas are promoted at 7 s and at 11.2 s (manual failovers that lose nothing). Each
// promotion holds grants back a TTL after a system can learn of it: the first until 7 + 1.3 + 3 =
// 11.3 s, and since the second lies inside that, until 11.2 + 1.3 + 3 = 15.5 s. b, correct, takes e1 at
// 11.4 s (it may: early is no fault), renews through both promotions, answered, and polls every second:
// nothing is violated. The same history with b's first poll at 15.7 s (past 15.601 s) is late.
func TestRedTeamTwoPromotions(t *testing.T) {
	s := time.Second
	base := func() *builder {
		return rtCrash().with(func(m *history.Meta) { m.Assumptions.Topology = "sentinel"; m.Assumptions.DriftBound = 0.01 }).
			note(history.NotePromotion+"redis-0 -> redis-1", 7*s).note(history.NotePromotion+"redis-1 -> redis-2", 11*s+ms(200))
	}
	rep := rtCheck(base().rtTake("b", 11*s+ms(400)).rtToken("b", "e1", 2))
	for _, r := range rep.Results {
		require.NotEqual(t, Violated, r.Outcome, "%s: %s", r.Invariant, allText(r))
	}
	o, msg := rtOutcome(t, rtCheck(base().rtTake("b", 15*s+ms(550))), InvFailover)
	require.NotEqual(t, Violated, o, msg)
	o, msg = rtOutcome(t, rtCheck(base().rtTake("b", 15*s+ms(700))), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A handoff routed through a member the fleet counted on, cut off unseen. c is partitioned from
// 5 s (its heartbeats from 5.03 s are dropped: it gives up on the first at 5.33 s); its last landed
// heartbeat (4.03 s, answered 4.031 s) counts it a member until 7.032 s. a releases e1 at 5.6 s (to
// rebalance, and stays); the fleet may have handed e1 to c, which cannot act: owed when c's heartbeat
// runs out, 7.032 s, deadline 7.133 s. b takes it at 7.1 s: in time; at 7.2 s: late.
func TestRedTeamAHandoffThroughAMemberCutOffUnseen(t *testing.T) {
	s := time.Second
	base := func() *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 20*s).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("c", ms(30), 5*s).
			fault("f1", "partition", 5*s, 15*s, false, false, "c")
		for at := 5*s + ms(30); at < 15*s; at += s {
			b.lostBeat("c", at)
		}
		return b.release("a", "e1", "a:10", 5*s+ms(600))
	}
	rtDump(t, base().rtTake("b", 7*s+ms(100)), "e1")
	o, msg := rtOutcome(t, rtCheck(base().rtTake("b", 7*s+ms(100))), InvFailover)
	require.NotEqual(t, Violated, o, msg)
	o, msg = rtOutcome(t, rtCheck(base().rtTake("b", 7*s+ms(200))), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A holder whose renewal reply came too late, and that re-acquired within a detection latency. A
// latency of 400 ms lies on a's link over [5.0 s, 5.5 s]: a's renewal sent at 5.01 s lands at 5.21 s but
// its reply would come at 5.41 s, past the call bound; a gives up at 5.31 s, stops believing and polling
// (it fails closed; its poll at 5.015 s, before it knew, went out). At 6.01 s, its link healthy again, it re-acquires its own value (answered granted at
// 6.012 s), believes and polls again from 6.015 s. Nothing is violated: the gap [5.015 s, 6.015 s] is
// within a's cadence anyway, and a's value was in the key throughout.
func TestRedTeamALateReplyAndAReacquire(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01).life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
		hold("a", "e1", ms(10), 5*s).beats("a", ms(20), 5*s).
		rtLatency("f1", "a", 5*s, 5*s+ms(500), "400ms", "0s").
		lost("a", history.OpRenew, "e1", "a:10", 5*s+ms(10)).lostBeat("a", 5*s+ms(20)).
		poll("a", "e1", 5*s+ms(15), 5*s+ms(115), 1).belief("a", "e1", 5*s+ms(310), false, 1).
		hold("a", "e1", 6*s+ms(10), 20*s).beats("a", 6*s+ms(20), 20*s)
	// hold names the re-acquired value a:6010; make it a's old value, which the key still holds.
	for i := range b.events {
		if e := b.events[i]; e.Op != nil && e.Op.Owner == "a:6010" {
			b.events[i].Op.Owner = "a:10"
		}
	}
	rtDump(t, b, "e1")
	rep := rtCheck(b)
	for _, r := range rep.Results {
		require.NotEqual(t, Violated, r.Outcome, "%s: %s", r.Invariant, allText(r))
	}
}

// Was a false alarm. A taker whose clock runs slow within the drift bound. The system declares a drift
// bound of 0.04 and b's clock runs at 0.96 throughout (a clock-drift fault inside the bound). a crashes at
// 5.5 s. b read e1's PTTL right after a's last renewal (5.012 s: 3 s left) and armed its takeover alarm
// on its own clock, as the reference does (lease/guard.go: "a slower one fires late by at most
// DriftBound times the ... remaining length"): 3 s of b's clock are 3 / 0.96 = 3.125 s of real time, so
// b acts at 8.137 s and polls at 8.145 s. The model owes e1 at 8.022 s and allows the tolerance (101 ms,
// scheduling only): deadline 8.123 s, and b's takeover is reported late.
//
// What the history proves: the drift is inside the assumptions, so a wait the taker times on its own
// clock may run TTL × b/(1 − b) = 125 ms long over a TTL. At the builder's tenth scale this needs a bound
// of 0.04 to exceed the tolerance; at spec timing (TTL 30 s) the reference's own bound 0.01 gives 303 ms
// over a TTL-long wait (a guard's: TTL + D, 434 ms), while the tolerance "does not scale with the time
// scale". The deadline should allow the taker's timer its drift: 8.022 + 0.125 + 0.101 = 8.248 s (and a
// guard's end likewise).
func TestRedTeamATakerWhoseClockRunsSlowWithinTheBound(t *testing.T) {
	s := time.Second
	b := rtCrash().assume(0.04).fault("f2", "clock-drift", 0, 20*s, false, false, "b").withParams("rate", "0.96").
		rtTake("b", 8*s+ms(145))
	rtDump(t, b, "e1")
	rep := rtCheck(b)
	o, msg := rtOutcome(t, rep, InvAssumptions)
	require.Equal(t, Pass, o, "the drift lies inside the bound: %s", msg)
	o, msg = rtOutcome(t, rep, InvFailover)
	require.NotEqual(t, Violated, o, msg)
}
