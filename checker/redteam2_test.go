package checker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// Red-team histories, second round (docs/checker.md; the first round is redteam_test.go, whose builders
// rtPair, rtCrash, rtTake, rtLatency, rtSlowAnswers, rtToken, rtCheck, rtDump and rtOutcome are used
// here). Each test asserts the verdict the history deserves. The unmarked ones each found a gap in the
// model, now closed (the test failed before); those marked "holds" are attacks the model answered
// correctly.
//
// Timing throughout is the builder's (newBuilder): TTL 3 s, renewals and heartbeats every 1 s, call
// bound 300 ms, polls of 100 ms every 1 s, heartbeat TTL 3 s; detection latency D = 1 s + 300 ms =
// 1.3 s; tolerance 101 ms; cadence 1 s + 100 ms + 101 ms = 1.201 s; no drift bound unless assumed
// (a confirmed lease runs from the reply to request + TTL).

// rt2Bad lists the results of rep that are not a pass (violated, inconclusive or unknown), each with its
// findings; skipped and caught results are passes.
func rt2Bad(rep Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Outcome == Violated || r.Outcome == Inconclusive || r.Outcome == Unknown {
			out = append(out, fmt.Sprintf("%s %s: %s", r.Invariant, r.Outcome, allText(r)))
		}
	}
	return out
}

// rt2LostPing adds a probe (PING) of inst's that got no reply: its caller gave up a call bound later.
func (b *builder) rt2LostPing(inst string, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindOp, At: at, End: history.Infinity, Instance: inst,
		Op: &history.Op{Kind: history.OpOther, Command: "ping", Unknown: true, Err: "i/o timeout", GaveUp: at + ms(300)}})
}

// ---------------------------------------------------------------------------------------------------
// (A) false passes
// ---------------------------------------------------------------------------------------------------

// A session paused and resumed while its holder keeps the lease, and never polls again.
//
// a holds e1 throughout (rtPair(20 s): acquire at 10 ms, renewals every second to 19.01 s, all answered;
// heartbeats throughout). The harness pauses e1's session at 6.5 s and resumes it at 8 s. a polls e1 until
// 6.015 s (its last poll before the pause) and never again, though it renews its lease to the run's end.
//
// What the model does: the resumed session opens a new active interval [8 s, 20 s] whose first gap has no
// previous poll, so it is judged as a "first grant": a takeover that waits until e1's key is free of every
// value — and a's value, renewed by a to 19.01 s, lives to 22.01 s, past the run. The "new holding"
// obligation counts only confirmed leases that begin inside the gap; a's began at 12 ms. So nothing is
// owed for e1 after the resume, and liveness passes.
//
// What the history proves: a held e1 (confirmed every second) the whole time the session was active
// again, and e1 went unpolled from 8 s to 20 s. A holder learns of the resume within the detection
// latency (1.3 s) and owes its poll within its cadence: e1 was owed by 8 + 1.3 + 1.201 = 10.501 s at the
// very latest (the first-grant deadline the model gives an unheld new endpoint is 8 + 1.3 + 0.101 s).
// The same with the session removed at 6.5 s and added again at 8 s. Control: the same holder that
// resumes polling at 9.4 s passes.
func TestRedTeam2AResumedSessionWhoseHolderNeverPollsAgain(t *testing.T) {
	s := time.Second
	for _, c := range []struct{ off, on history.SessionChange }{
		{history.SessionPaused, history.SessionResumed},
		{history.SessionRemoved, history.SessionAdded},
	} {
		t.Run(string(c.off)+"-"+string(c.on), func(t *testing.T) {
			base := func() *builder {
				b := rtPair(20*s).session("e1", c.off, 6*s+ms(500)).session("e1", c.on, 8*s)
				b.events = dropPolls(b.events, "a", "e1", 6*s+ms(100), 20*s)
				return b
			}
			o, msg := rtOutcome(t, rtCheck(base().polls("a", "e1", 9*s+ms(400), 20*s, s, 1)), InvLiveness)
			require.Equal(t, Pass, o, "control: a resumes polling 1.4 s after the session is back: %s", msg)
			rtDump(t, base(), "e1")
			o, msg = rtOutcome(t, rtCheck(base()), InvLiveness)
			require.Equal(t, Violated, o, msg)
		})
	}
}

// A poll after the poller's own answered release, while another instance holds the lease.
//
// a holds e1 (rtPair: renewals at k s + 10 ms, the last at 5.01 s; polls at k s + 15 ms, token 1) and
// hands it over at 5.6 s: its belief ends and its release is answered (deleted) at 5.602 s. b acquires e1
// at 5.605 s (granted at 5.607 s, token 2) and polls from 5.66 s, in time for the handoff (deadline
// 5.602 + 0.101 s). a polls e1 once more over [5.62 s, 5.65 s], token 1 (the resource has seen only
// token 1, so it lets it in).
//
// What the model does: a's confirmed lease runs from the reply of its renewal at 5.01 s to 5.01 + 3 s,
// whatever a did since; validity finds a's poll at 5.62 s inside it. single-poller sees no overlap (a's
// poll ends at 5.65 s, b's begins at 5.66 s) and no zombie (b polled after a). fencing sees tokens
// 1, 1, ..., 1, 2, 2: never backwards. Every invariant passes.
//
// What the history proves: at 5.602 s a knew its value was gone from the key (its release answered OK);
// from 5.607 s the key held b's value, confirmed to b. a's poll at 5.62 s reached the resource inside b's
// lease, on a lease a itself had given up: a poll outside its poller's lease, which validity exists to
// report (a confirmed lease cannot outlast the poller's own answered release of it). Control: without the
// poll at 5.62 s, everything passes.
func TestRedTeam2APollAfterItsOwnAnsweredRelease(t *testing.T) {
	s := time.Second
	base := func() *builder {
		b := rtPair(5*s+ms(500)).belief("a", "e1", 5*s+ms(600), false, 1).release("a", "e1", "a:10", 5*s+ms(600))
		b.op("b", history.OpAcquire, "poll:lease:e1", "b:5605", 3*s, 5*s+ms(605), 5*s+ms(607), true, "")
		for at := 6*s + ms(605); at < 20*s; at += s {
			b.op("b", history.OpRenew, "poll:lease:e1", "b:5605", 3*s, at, at+ms(2), true, "")
		}
		return b.polls("b", "e1", 5*s+ms(660), 20*s, s, 2)
	}
	require.Empty(t, rt2Bad(rtCheck(base())), "control")
	rep := rtCheck(base().poll("a", "e1", 5*s+ms(620), 5*s+ms(650), 1))
	o, msg := rtOutcome(t, rep, InvValidity)
	require.Equal(t, Violated, o, msg)
}

// A handoff whose release went unanswered but was seen to land.
//
// a holds e1 (rtPair(5.5 s): last renewal 5.01 s, answered 5.012 s) and stays in the fleet, heartbeating
// (answered) from 6.02 s on. A hold on a's link delays its releases by 400 ms over [5.5 s, 6 s]
// (slow-requests, match=release: nothing else is held). At 5.6 s a stops believing and hands e1 over: its
// release is held on the wire, a gives up on it at 5.9 s, and the harness sees it land at 6.0 s
// (Op.Landed). The key held a:10 then (renewed at 5.01 s, alive to 8.013 s, nobody else granted), so the
// release, a compare-and-delete of a:10, deleted it: from 6.0 s the key is empty. b takes e1 at 7.9 s.
//
// What the model does: the record ignores every unanswered release, Landed or not ("if !answered
// continue" in buildKey), so a:10 "may be in the key" until 8.013 s; the handoff's takeover waits for it
// (capped at b's grant, 7.897 s, which shows the key was to be had then: deadline 7.998 s), and b's poll
// at 7.9 s passes.
//
// What the history proves: the docs' own rule is that a write the harness saw land "took effect then"
// (effects.landing uses Op.Landed for every op); a landed release of the value the key held kills it as
// an answered one does. From 6.0 s e1 was free and its holder had handed it over: owed at 6.0 s as the
// model owes any handoff at its release (deadline 6.101 s), or, granting the fleet a detection latency to
// notice a release whose reply its sender never saw, by 6.0 + 1.3 + 0.101 = 7.401 s. b's poll at 7.9 s
// is late either way. Control: the same release not seen to land (it may have landed any time up to
// 6.3 s, or never) leaves a:10 possibly in the key to 8.013 s, and 7.9 s is in time.
func TestRedTeam2AHandoffWhoseReleaseLandedUnanswered(t *testing.T) {
	s := time.Second
	base := func(landed bool) *builder {
		b := rtPair(5*s+ms(500)).beats("a", 6*s+ms(20), 20*s).
			fault("f1", "slow-requests", 5*s+ms(500), 6*s, false, false, "a").withParams("delay", "400ms", "match", "release").
			belief("a", "e1", 5*s+ms(600), false, 1).lost("a", history.OpRelease, "e1", "a:10", 5*s+ms(600))
		if landed {
			b.events[len(b.events)-1].Op.Landed = 6 * s
		}
		return b.rtTake("b", 7*s+ms(900))
	}
	o, msg := rtOutcome(t, rtCheck(base(false)), InvFailover)
	require.NotEqual(t, Violated, o, "control: %s", msg)
	rtDump(t, base(true), "e1")
	o, msg = rtOutcome(t, rtCheck(base(true)), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// A holder whose belief flaps, while its own renewals keep its value in the key, never polls again.
//
// a acquires e1 at 10 ms and renews it, answered OK, every second to 19.01 s; it heartbeats throughout.
// It polls until 5.015 s. From 5.5 s its belief flaps: held=false ("lost") at k + 500 ms and held=true
// ("acquired", same token) at k + 600 ms, every second to the run's end. No fault, no lost call: a's value
// a:10 is in the key all along, by a's own confirmed renewals, and nobody else can be granted e1.
//
// What the model does: the belief's end at 5.5 s ends a's holding (cadence no longer owed); the takeover
// waits for a's value, alive to 22.013 s. resumed finds a's renewal at 6.01 s, confirmed, but drops the
// obligation because "the holding ends again first" — the next flap of the belief at 6.5 s, before its
// due 7.213 s — and so for every renewal after. Nothing is owed for 14.5 s; liveness passes.
//
// What the history proves: e1 was an active target, held by a (confirmed every second), with no fault in
// the run, and went unpolled from 5.015 s to 20 s. A holding the holder itself keeps confirming cannot
// be excused by the holder's own statement that it ended: each end is followed, within the cadence, by
// another confirmation of the value a keeps in the key. Whatever a believes, e1 was owed a poll by
// 6.012 + 1.201 = 7.213 s (a's first confirmation after the first flap), or a release. Control: the
// same flapping holder polling each time it believes again passes.
func TestRedTeam2AFlappingBeliefKeepsTheEndpointFromEveryone(t *testing.T) {
	s := time.Second
	base := func() *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("a", ms(20), 20*s).
			op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, ms(10), ms(12), true, "").
			held("a", "e1", ms(12), 1, history.ReasonAcquired, 0).
			polls("a", "e1", ms(15), 5*s+ms(500), s, 1)
		for at := s + ms(10); at < 20*s; at += s {
			b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
		}
		for k := 5 * s; k < 20*s; k += s {
			b.add(history.Event{Kind: history.KindBelief, At: k + ms(500), Instance: "a", Endpoint: "e1",
				Belief: &history.Belief{Held: false, Token: 1, Reason: "lost"}})
			b.held("a", "e1", k+ms(600), 1, history.ReasonAcquired, 0)
		}
		return b
	}
	o, msg := rtOutcome(t, rtCheck(base().polls("a", "e1", 5*s+ms(650), 20*s, s, 1)), InvLiveness)
	require.Equal(t, Pass, o, "control: a polls whenever it believes: %s", msg)
	rtDump(t, base(), "e1")
	rep := rtCheck(base())
	t.Logf("the invariants that report it: %q", rt2Bad(rep)) // none, on the checker as it stands
	o, msg = rtOutcome(t, rep, InvLiveness)
	require.Equal(t, Violated, o, msg)
}

// A renewal that raced its holder's release is taken for a holding resumed.
//
// The first round's handoff through a member cut off unseen (TestRedTeamAHandoffThroughAMemberCutOffUnseen:
// c partitioned from 5 s, its last landed heartbeat counting it a member until 7.032 s; a releases e1 at
// 5.6 s, answered at 5.602 s; the fleet may have handed e1 to c, so e1 is owed at 7.032 s, deadline
// 7.133 s; b takes it at 7.1 s: in time). Here a's renewal loop had one renewal of e1 in flight when it
// released: sent at 5.6 s, on another connection, its reply (OK) read at 5.65 s. a's belief ends at 5.6 s.
//
// What the model does: resumed sees a renewal sent at or after the end of a's holding (5.6 s), answered
// OK at 5.65 s inside a's confirmed lease, and owes a's cadence from it: a poll by 5.65 + 1.201 = 6.851 s.
// holdingEnd(a, 5.65 s) does not see the release (sent at 5.6 s, before 5.65 s), so the obligation stands,
// and b's takeover at 7.1 s is reported late (liveness).
//
// What the history proves: both the renewal (compare-and-extend of a:10) and the release
// (compare-and-delete of a:10) answered OK, so Redis applied the renewal first and the release after it:
// the key was without a's value from 5.602 s at the latest, and a knew it had handed e1 over. Nothing was
// "in the key by its own hand" at 5.65 s. The history deserves what the first round's does: pass.
func TestRedTeam2ARenewalThatRacedTheReleaseResumesNothing(t *testing.T) {
	s := time.Second
	base := func(race bool) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 20*s).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("c", ms(30), 5*s).
			fault("f1", "partition", 5*s, 15*s, false, false, "c")
		b.lostBeat("c", 5*s+ms(30))
		for at := 6*s + ms(30); at < 15*s; at += s {
			b.rt2LostPing("c", at) // c probes its link before it writes again, as the reference does
		}
		b.belief("a", "e1", 5*s+ms(600), false, 1).release("a", "e1", "a:10", 5*s+ms(600))
		if race {
			b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, 5*s+ms(600), 5*s+ms(650), true, "")
		}
		return b.rtTake("b", 7*s+ms(100)).rtToken("b", "e1", 2)
	}
	require.Empty(t, rt2Bad(rtCheck(base(false))), "control: no renewal in flight")
	rtDump(t, base(true), "e1")
	require.Empty(t, rt2Bad(rtCheck(base(true))))
}

// A graceful stop after a rebalance is blamed for not releasing what it had already handed over.
//
// a holds e1 (renewals at k s + 10 ms; the last at 4.01 s) and hands it to b at 4.2 s: its belief ends and
// its release is answered (deleted) at 4.202 s. b acquires e1 at 4.205 s (granted 4.207 s), renews and
// polls it from 4.21 s. a, holding nothing now, heartbeats on and is stopped gracefully at 5.5 s (stopped
// at 5.6 s); it has nothing to release.
//
// What the model does: checkStopReleases judges every endpoint the stopping instance held at the stop by
// its confirmed lease or its belief. a's confirmed lease of e1 runs from the renewal at 4.01 s to 7.01 s,
// whatever a did since (validWindows never ends a lease at its holder's own release), so a "held e1 at
// 5.5 s", and no release of e1 lies in [5.5 s − cadence, 5.701 s]: "a stopped gracefully at 5.5s holding
// e1, and sent no release of it" — a failover violation.
//
// What the history proves: a released e1 at 4.2 s, answered; b held it, confirmed, from 4.207 s. a held
// nothing when it stopped. Every invariant should pass.
func TestRedTeam2AStopAfterARebalanceHadNothingToRelease(t *testing.T) {
	s := time.Second
	b := rtPair(4*s+ms(200)).beats("a", 4*s+ms(220), 5*s+ms(500)).
		belief("a", "e1", 4*s+ms(200), false, 1).release("a", "e1", "a:10", 4*s+ms(200)).
		hold("b", "e1", 4*s+ms(205), 20*s).rtToken("b", "e1", 2).
		fault("f1", "stop", 5*s+ms(500), 5*s+ms(600), true, false, "a").life("a", history.LifeStopped, 5*s+ms(600))
	require.Empty(t, rt2Bad(rtCheck(b)))
}

// A taker that cuts its own calls short is never "ready".
//
// a crashes at 5.5 s (rtCrash): e1 is owed at 8.022 s, deadline 8.123 s. b, the only other member, holds
// e2 and renews and polls it on time throughout (every renewal answered in 2 ms), and never takes e1.
// From 6.5 s b also reads a key of its own bookkeeping every second with a 1 ms deadline of its own
// making: each read fails "context deadline exceeded" 1 ms after it was sent (GaveUp = At + 1 ms). No
// fault is in the run after the crash.
//
// What the model does: any unanswered call impedes its instance ("with no fault to explain it, until
// its caller gave up"), and an instance is ready only once unimpeded for D = 1.3 s. b's self-cut reads,
// one a second, never leave it 1.3 s unimpeded: someoneReady finds nobody ready before the run's end,
// the takeover's deadline is past the run, and failover passes.
//
// What the history proves: b completed a call every second (its renewals of e2, answered in 2 ms); a call
// its own caller abandoned after 1 ms, a three-hundredth of the call bound, shows nothing about its link
// or the backend — the system made that "impediment" itself. b could act all along, and never took e1:
// a violation, as in the control without the reads.
func TestRedTeam2ATakerThatCutsItsOwnCallsShortIsStillReady(t *testing.T) {
	s := time.Second
	o, msg := rtOutcome(t, rtCheck(rtCrash()), InvFailover)
	require.Equal(t, Violated, o, "control: %s", msg)
	b := rtCrash()
	for at := 6*s + ms(500); at < 20*s; at += s {
		b.rt2SelfCut("b", at)
	}
	rtDump(t, b, "e1")
	o, msg = rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// rt2SelfCut adds a read of inst's own bookkeeping that its caller abandoned after 1 ms (a deadline of
// its own, far below the call bound): unanswered, "context deadline exceeded".
func (b *builder) rt2SelfCut(inst string, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindOp, At: at, End: history.Infinity, Instance: inst,
		Op: &history.Op{Kind: history.OpOther, Key: "poll:targets", Command: "get poll:targets", Unknown: true,
			Err: "context deadline exceeded", GaveUp: at + ms(1)}})
}

// A holder that cuts its own calls short believes past its key for ever.
//
// The first round's stale belief (TestRedTeamABeliefOutlivesItsKeyBehindALatencyWindow, control): a
// acquires e1 at 0 and renews it at 1 s and 2 s (answered), then stops renewing but goes on believing,
// with no deadline, until 15 s; it stops polling at 2.5 s. Its value lives until 2.002 + 3.001 = 5.003 s;
// it may believe 1.401 s past that. Here, from 3.5 s, a also reads a key of its own every second with a
// 1 ms deadline of its own making (each unanswered, given up 1 ms after). No fault is in the run.
//
// What the model does: checkStaleBelief counts the bound from readyWithin(a, 5.003 s, 1.401 s), the end of
// a chain of impeded stretches each beginning within 1.401 s of the last: the self-cut reads, one a
// second, carry it to 14.501 s, and 15 − 14.501 < 1.401: nothing is reported.
//
// What the history proves: a's heartbeats, answered every second, show it could complete calls all
// along; the reads it abandoned after 1 ms show only that it abandoned them. a believed 15 − 5.003 −
// 1.401 = 8.6 s too long: a violation, as in the control without the reads.
func TestRedTeam2AHolderThatCutsItsOwnCallsShortStillOwesItsBeliefsEnd(t *testing.T) {
	s := time.Second
	base := func(cut bool) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).
			op("a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true, "").
			held("a", "e1", ms(2), 1, history.ReasonAcquired, 0).
			op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, s, s+ms(2), true, "").
			op("a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, 2*s, 2*s+ms(2), true, "").
			polls("a", "e1", ms(5), 2*s+ms(500), s, 1).beats("a", ms(20), 20*s).
			belief("a", "e1", 15*s, false, 1)
		if cut {
			for at := 3*s + ms(500); at < 15*s; at += s {
				b.rt2SelfCut("a", at)
			}
		}
		return b
	}
	o, msg := rtOutcome(t, rtCheck(base(false)), InvStaleBelief)
	require.Equal(t, Violated, o, "control: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base(true)), InvStaleBelief)
	require.Equal(t, Violated, o, msg)
}

// A holder keeps its orphaned value in the key with unconditional renewals (PEXPIRE).
//
// Drift bound 0.01. a holds e1 (hold: acquire at 10 ms, renewals to 5.01 s, each moving its belief's
// deadline) and polls until 5.015 s. At 5.5 s it reports that it lost e1 (held=false), stays in the fleet
// (heartbeats) and, from 8.0 s, renews e1's key every second with a plain PEXPIRE (history.AnyOwner, as
// sim's hook records PEXPIRE/EXPIRE, and as the asyncio election renews), each answered 1: the key existed
// and was extended. a's confirmed lease ended at 5.01 + 2.97 = 7.98 s, before the first reply (8.002 s),
// so validWindows drops every PEXPIRE (a blind renewal counts only when it joins a window of the
// sender's); but the key held a:10 until 5.012 + 3.001 = 8.013 s, so the record extends a:10 with each of
// them, to 22.01 s. (From 6 s instead, the PEXPIREs would join a's lease and resumed would owe its
// cadence: the trick is to send the first one after the lease but before the key's expiry, a window of
// TTL × drift bound, 30 ms here and 300 ms at spec timing.)
//
// What the model does: the holding ended at 5.5 s (the belief); the takeover waits for a:10, which "may
// be in the key" until 22.01 s by its writer's own writes (ownUntilBefore counts a's own PEXPIREs), and
// blockedUntil lets it run out: a:10 is not stale (every write of it carrying its owner was confirmed),
// and resumed sees no confirmed lease. Nothing is owed within the run; liveness passes with e1 unpolled
// from 5.015 s to 20 s and every other invariant passing.
//
// What the history proves: every PEXPIRE of a's was answered 1 at a moment when only a:10 could be in the
// key: a kept e1 from everyone for 12 s by its own confirmed writes, after saying it had lost it, and
// never polled it. Its value is in the key by its own hand, as the docs' "new holding" puts it: e1 was
// owed a poll by a within its cadence of its first such confirmation, 8.002 + 1.201 = 9.203 s, or a
// takeover at the value's expiry without them, 8.013 s + 0.101 s.
func TestRedTeam2AHolderKeepsItsOrphanedValueWithUnconditionalRenewals(t *testing.T) {
	s := time.Second
	b := rtPair(5*s+ms(500)).assume(0.01).beats("a", 5*s+ms(20), 20*s)
	b.add(history.Event{Kind: history.KindBelief, At: 5*s + ms(500), Instance: "a", Endpoint: "e1",
		Belief: &history.Belief{Held: false, Token: 1, Reason: "lost"}})
	for at := 8 * s; at < 20*s; at += s {
		b.op("a", history.OpRenew, "poll:lease:e1", history.AnyOwner, 3*s, at, at+ms(2), true, "")
	}
	rtDump(t, b, "e1")
	rep := rtCheck(b)
	t.Logf("the invariants that report it: %q", rt2Bad(rep)) // none, on the checker as it stands
	o, msg := rtOutcome(t, rep, InvLiveness)
	require.Equal(t, Violated, o, msg)
}

// A grant on a minority of independent nodes confirms no lease.
//
// A Redlock-style system on three independent nodes (history.Op.Node). a acquires e1 on redis-0, redis-1
// and redis-2 at 0 and renews it on all three every second (k s + 10 ms, the last at 5.01 s), polling until
// 5.015 s; a crashes at 5.5 s. redis-2 restarts empty over [5.6 s, 5.7 s] (WipedNode redis-2): a's copy
// there is gone; on redis-0 and redis-1 a's value lives until 8.013 s. At 6 s b tries all three: redis-0
// and redis-1 refuse (they hold a's value), redis-2 grants (answered 6.002 s). b holds e1 on one node of
// three, a minority: it does not hold the lock. It polls e1 at 6.05 s with token 2 anyway, then gives
// the minority back (releases its copy at 6.2 s) and takes e1 properly at 8.05 s, on all three nodes,
// polling from 8.1 s (token 3).
//
// What the model does: newLeases keys confirmed leases by (instance, endpoint), ignoring Op.Node, so the
// grant on redis-2 alone gives b a confirmed lease [6.002 s, 9.0 s]; validity finds b's poll inside it.
//
// Every invariant passes: validity is the only one that can see a poll with no competitor polling.
//
// What the history proves: the model itself holds that a lock on independent nodes is held by a
// majority (quorumRenewed: a refusal by one node ends nothing when a majority granted the round). b's
// round was granted by one node of three and refused by two, which held a's value until 8.013 s: b's poll
// at 6.05 s lay outside any lease of b's. Control: with redis-1 wiped too and its grant, b holds two of
// three, a majority, and its poll is valid.
func TestRedTeam2AGrantOnAMinorityOfNodesConfirmsNoLease(t *testing.T) {
	s := time.Second
	nodes := []string{"redis-0", "redis-1", "redis-2"}
	base := func(wiped ...string) *builder {
		b := newBuilder().assume(0.01).life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			beats("a", ms(20), 5*s+ms(500)).beats("b", ms(25), 20*s)
		for _, n := range nodes {
			b.opOn(n, "a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true)
			for at := s + ms(10); at < 5*s+ms(500); at += s {
				b.opOn(n, "a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, at, at+ms(2), true)
			}
		}
		b.polls("a", "e1", ms(15), 5*s+ms(500), s, 1).
			fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
		for i, n := range nodes {
			lost := false
			for _, w := range wiped {
				lost = lost || w == n
			}
			if lost {
				b.fault(fmt.Sprintf("w%d", i), "redis-restart", 5*s+ms(600), 5*s+ms(700), false, true)
				b.events[len(b.events)-1].Fault.WipedNode = n
			}
			b.opOn(n, "b", history.OpAcquire, "poll:lease:e1", "b:6000", 3*s, 6*s, 6*s+ms(2), lost)
			if lost {
				b.opOn(n, "b", history.OpRelease, "poll:lease:e1", "b:6000", 0, 6*s+ms(200), 6*s+ms(202), true)
			}
		}
		b.poll("b", "e1", 6*s+ms(50), 6*s+ms(150), 2)
		// b takes e1 properly once a's copies expire (8.013 s): granted on all three at 8.05 s.
		for _, n := range nodes {
			b.opOn(n, "b", history.OpAcquire, "poll:lease:e1", "b:8050", 3*s, 8*s+ms(50), 8*s+ms(52), true)
			for at := 9*s + ms(50); at < 20*s; at += s {
				b.opOn(n, "b", history.OpRenew, "poll:lease:e1", "b:8050", 3*s, at, at+ms(2), true)
			}
		}
		return b.polls("b", "e1", 8*s+ms(100), 20*s, s, 3)
	}
	o, msg := rtOutcome(t, rtCheck(base("redis-1", "redis-2")), InvValidity)
	require.Equal(t, Pass, o, "control: a majority granted b's round: %s", msg)
	rep := rtCheck(base("redis-2"))
	t.Logf("the invariants that report it: %q", rt2Bad(rep)) // none, on the checker as it stands
	o, msg = rtOutcome(t, rep, InvValidity)
	require.Equal(t, Violated, o, msg)
}

// A stop that never released is excused by 26 ms of lag.
//
// a, the only instance, holds e1 (hold: renewals to 5.01 s, polls to 5.015 s) and is stopped gracefully at
// 5.5 s (stopped at 5.6 s). It sends no release of e1, then or ever. The harness's canary was 30 ms late
// once, observed at 5.55 s (the lateness covered [5.52 s, 5.55 s]).
//
// What the model does: checkStopReleases reports "a stopped gracefully at 5.5s holding e1, and sent no
// release of it ... (by 5.701s)" as a failover violation with From 5.5 s, To 5.701 s and Over 0. judgeLag
// then finds lag above the 25 ms threshold inside [5.5 s, 5.701 s], covering 30 ms ≥ Over = 0, and
// moves the finding to Inconclusive: failover is inconclusive, never a violation.
//
// What the history proves: no release of e1 by a exists anywhere in the history — not late, absent; a
// was gone from 5.6 s and sent nothing after. Lag can make a release late; it cannot make one that was
// never sent. The docs call a stop that releases nothing "a violation of its own ... which no later fault
// excuses", and a missing write "a decision, not a timing" (as blind-write, which lag never excuses).
// Control: the same history without the lag sample is a violation.
func TestRedTeam2LagDoesNotExcuseAStopThatNeverReleased(t *testing.T) {
	s := time.Second
	base := func() *builder {
		return newBuilder().with(func(m *history.Meta) { m.Instances = 1 }).life("a", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 5*s+ms(500)).
			fault("f1", "stop", 5*s+ms(500), 5*s+ms(600), true, false, "a").life("a", history.LifeStopped, 5*s+ms(600))
	}
	o, msg := rtOutcome(t, rtCheck(base()), InvFailover)
	require.Equal(t, Violated, o, "control: %s", msg)
	require.Contains(t, msg, "sent no release of it")
	o, msg = rtOutcome(t, rtCheck(base().withLag(history.LagSample{At: 5*s + ms(550), Canary: ms(30)})), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// A holder cut off from the backend believes past its key for as long as the partition lasts.
// (A judgement call: docs/checker.md states this allowance; the attack is on its premise.)
//
// a, the only instance, holds e1 (acquire at 10 ms, renewals to 5.01 s, answered; its belief, recorded
// without a deadline, as a system that reports none does) and polls every second. a is partitioned over
// [5.5 s, 15 s]: its renewal at 6.01 s is dropped (given up at 6.31 s; its poll at 6.015 s, before it
// knew, went out, inside its lease) and it polls no more; it then probes its link every second (PING,
// unanswered) and writes nothing. Its probe at 15.01 s is answered at 15.011 s; at 15.05 s it reports
// that it lost e1, re-acquires it at 15.1 s and polls from 15.15 s.
//
// What the model does: a's value lives until 5.012 + 3.001 = 8.013 s; a believes until 15.05 s.
// checkStaleBelief counts the bound from readyWithin(a, 8.013 s), the end of a's impeded stretch
// (15.011 s): 15.05 − 15.011 < 1.401 s, nothing is reported. (Failover and liveness pass correctly: a was
// the only instance and could take e1 back only once its link was.)
//
// What the history proves: a knew at 6.31 s that its renewal had no answer, and its last confirmation
// (sent at 5.01 s) let its value live to 8.013 s at most: a holder needs its clock, not a call, to know
// its lease ran out (the reference ends its belief at its local deadline, lease/deadline.go; the docs'
// confirmed lease: "a holder whose clock errs within the drift bound stops by then"). The bound's premise,
// "the holder finds out at its next renewal", holds here: that renewal's failure is how it finds out. A
// process cut off from Redis runs and can report; only a frozen one (a pause that took hold) cannot.
// From 8.013 s any instance that tried would have been granted e1 while a believed: it believed
// 15.05 − 8.013 − 1.401 = 5.636 s too long. A violation.
func TestRedTeam2ABeliefOutlivesItsKeyThroughAPartition(t *testing.T) {
	s := time.Second
	b := newBuilder().with(func(m *history.Meta) { m.Instances = 1 }).life("a", history.LifeStarted, 0).
		op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, ms(10), ms(12), true, "").
		held("a", "e1", ms(12), 1, history.ReasonAcquired, 0).
		polls("a", "e1", ms(15), 5*s+ms(500), s, 1).beats("a", ms(20), 5*s+ms(500)).
		fault("f1", "partition", 5*s+ms(500), 15*s, false, false, "a").
		lost("a", history.OpRenew, "e1", "a:10", 6*s+ms(10)).poll("a", "e1", 6*s+ms(15), 6*s+ms(115), 1)
	for at := s + ms(10); at < 5*s+ms(500); at += s {
		b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
	}
	for at := 7*s + ms(10); at < 15*s; at += s {
		b.rt2LostPing("a", at)
	}
	b.add(history.Event{Kind: history.KindOp, At: 15*s + ms(10), End: 15*s + ms(11), Instance: "a",
		Op: &history.Op{Kind: history.OpOther, Command: "ping", OK: true}})
	b.add(history.Event{Kind: history.KindBelief, At: 15*s + ms(50), Instance: "a", Endpoint: "e1",
		Belief: &history.Belief{Held: false, Token: 1, Reason: "lost"}})
	b.hold("a", "e1", 15*s+ms(100), 20*s).beats("a", 15*s+ms(120), 20*s).rtToken("a", "e1", 1)
	rep := rtCheck(b)
	for _, inv := range []string{InvFailover, InvLiveness, InvBlindWrite, InvValidity} {
		o, msg := rtOutcome(t, rep, inv)
		require.NotEqual(t, Violated, o, "%s: %s", inv, msg)
	}
	o, msg := rtOutcome(t, rep, InvStaleBelief)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// attacks that held
// ---------------------------------------------------------------------------------------------------

// holds. The holder crashes and, before its key runs out, the only other member stops gracefully: nobody
// is left to take anything over until a newcomer has joined and can act.
//
// a crashes at 5.5 s (e1 owed at 8.022 s were anyone ready). b, holding e2, is stopped gracefully at
// 7 s: it releases e2 at 7.05 s (answered) and is gone at 7.1 s. c starts at 9 s and heartbeats; it is
// ready a detection latency after it joined, 10.3 s. Both e1 and e2 are owed then: deadline 10.401 s. c
// takes both at 10.35 s: pass. c takes both at 10.6 s: both late (failover). The model neither counts b
// as a taker after its stop nor lets its stop excuse the newcomer.
func TestRedTeam2ACrashAndAStopLeaveOnlyANewcomer(t *testing.T) {
	s := time.Second
	base := func(at time.Duration) *builder {
		b := rtPair(5*s+ms(500)).
			fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
		b.events = rt2DropFrom(b.events, "b", 7*s)
		b.fault("f2", "stop", 7*s, 7*s+ms(100), true, false, "b").release("b", "e2", "b:15", 7*s+ms(50)).
			belief("b", "e2", 7*s+ms(50), false, 1).life("b", history.LifeStopped, 7*s+ms(100)).
			life("c", history.LifeStarted, 9*s).beats("c", 9*s+ms(30), 20*s)
		return b.hold("c", "e1", at-ms(5), 20*s).hold("c", "e2", at-ms(5), 20*s).rtToken("c", "e1", 2).rtToken("c", "e2", 2)
	}
	require.Empty(t, rt2Bad(rtCheck(base(10*s+ms(350)))))
	o, msg := rtOutcome(t, rtCheck(base(10*s+ms(600))), InvFailover)
	require.Equal(t, Violated, o, msg)
	require.Contains(t, msg, "owed at 10.3s")
}

// rt2DropFrom removes inst's operations, polls and beliefs from at on (not its lifecycle).
func rt2DropFrom(evs []history.Event, inst string, at time.Duration) []history.Event {
	var out []history.Event
	for _, e := range evs {
		if e.Instance == inst && e.At >= at && (e.Kind == history.KindOp || e.Kind == history.KindPoll || e.Kind == history.KindBelief) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// holds. On two independent nodes a majority is both: a refusal by one ends the holding. a holds e1 on
// redis-0 and redis-1 (renewals at k s + 10 ms) and polls it until 4.015 s. redis-1 restarts empty over
// [4.5 s, 4.6 s] and refuses a's renewal at 5.01 s, while redis-0 grants it. a, correctly, fails closed:
// it polls and renews no more, and leaves its copy on redis-0 to expire (8.013 s). b takes e1 on both
// nodes at 8.05 s. quorumRenewed: one grant of two is no majority (2 × 1 > 2 is false), so the holding
// ended at the refusal (5.012 s), inside a's cadence (5.216 s), and the gap to b's poll is a takeover
// owed when a's copy expires (and the wipe's guard, 8.9 s, later still): b is in time, and nothing is
// owed of a. Had the model taken one grant of two for a majority, a's cadence would have been owed by
// 5.216 s and the gap reported.
func TestRedTeam2ARefusalOnOneOfTwoNodesEndsTheHolding(t *testing.T) {
	s := time.Second
	b := newBuilder().assume(0.01).life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		beats("a", ms(20), 20*s).beats("b", ms(25), 20*s).
		fault("f1", "redis-restart", 4*s+ms(500), 4*s+ms(600), false, true)
	b.events[len(b.events)-1].Fault.WipedNode = "redis-1"
	for _, n := range []string{"redis-0", "redis-1"} {
		b.opOn(n, "a", history.OpAcquire, "poll:lease:e1", "a:0", 3*s, 0, ms(2), true)
		for at := s + ms(10); at < 5*s+ms(500); at += s {
			b.opOn(n, "a", history.OpRenew, "poll:lease:e1", "a:0", 3*s, at, at+ms(2), n == "redis-0" || at < 4*s+ms(500))
		}
		b.opOn(n, "b", history.OpAcquire, "poll:lease:e1", "b:8050", 3*s, 8*s+ms(50), 8*s+ms(52), true)
		for at := 9*s + ms(50); at < 20*s; at += s {
			b.opOn(n, "b", history.OpRenew, "poll:lease:e1", "b:8050", 3*s, at, at+ms(2), true)
		}
	}
	b.polls("a", "e1", ms(15), 5*s, s, 1).polls("b", "e1", 8*s+ms(55), 20*s, s, 2)
	rtDump(t, b, "e1")
	require.Empty(t, rt2Bad(rtCheck(b)))
}

// holds. A drift far beyond the bound on the taker stretches its deadline, but the run is no pass unless
// the drift was declared outside the assumptions. a crashes at 5.5 s (e1 owed at 8.022 s); b's clock runs
// at 0.5 against a drift bound of 0.01, undeclared; b takes e1 at 10 s. slowClock stretches b's wait
// (TTL + D = 4.3 s at rate 0.5: up to 4.3 s more), so failover passes, but assumptions is Unknown: the
// run went beyond the system's assumptions without saying so. Declared, the drift explains a taker that
// waited on its own clock, and the run passes, as it should (a wait of TTL + D on a clock at half speed
// takes twice as long).
func TestRedTeam2ADriftBeyondTheBoundOnTheTakerIsNoSilentPass(t *testing.T) {
	s := time.Second
	b := rtCrash().assume(0.01).fault("f2", "clock-drift", 0, 20*s, false, false, "b").withParams("rate", "0.5").
		rtTake("b", 10*s)
	rep := rtCheck(b)
	o, msg := rtOutcome(t, rep, InvAssumptions)
	require.Equal(t, Unknown, o, msg)
	o, msg = rtOutcome(t, rep, InvFailover)
	require.Equal(t, Pass, o, "the stretch: %s", msg)
	declared := rtCrash().assume(0.01, "clock-drift").fault("f2", "clock-drift", 0, 20*s, false, false, "b").
		withParams("rate", "0.5").rtTake("b", 10*s).rtToken("b", "e1", 2)
	require.Empty(t, rt2Bad(rtCheck(declared)))
}

// holds. Harness pings that a backend fault delayed excuse nothing; the same pings with no backend fault
// make the finding inconclusive. a crashes at 5.5 s: e1 owed at 8.022 s, deadline 8.123 s; b takes it at
// 8.5 s, 377 ms late. The harness's PING answered 450 ms late at 6.4 s (lateness [5.95 s, 6.4 s], inside
// the stretch [5.5 s, 8.123 s], 450 ms ≥ 377 ms). With Redis paused over [6.0 s, 6.4 s] (a backend fault,
// no targets), the ping measured the fault, not the machine: failover is a violation.
func TestRedTeam2APingDuringABackendFaultExcusesNothing(t *testing.T) {
	s := time.Second
	base := func() *builder {
		return rtCrash().rtTake("b", 8*s+ms(500)).withLag(history.LagSample{At: 6*s + ms(400), Ping: ms(450)})
	}
	o, msg := rtOutcome(t, rtCheck(base()), InvFailover)
	require.Equal(t, Inconclusive, o, "control: the machine's lag: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base().fault("f2", "redis-pause", 6*s, 6*s+ms(400), false, false)), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A promotion while the taker's acquire is unanswered. Sentinel topology. a crashes at 5.5 s; its
// key lives until 8.013 s and its heartbeat counts it until 8.022 s. The primary is killed at 7.9 s and a
// replica promoted at 8.1 s (nothing replicated is lost, but nothing can tell). b's acquire of e1 sent at
// 7.95 s to the dead primary gets no reply (given up at 8.25 s); it may have landed after the promotion.
// The promotion holds grants back a TTL after a system can learn of it: until 8.1 + 1.3 + 3 = 12.4 s,
// deadline 12.501 s (b's possibly landed value b:7950 is stale, b's to clear, by 9.55 s: earlier). b
// acquires again at 12.45 s: pass; at 12.6 s: late.
func TestRedTeam2APromotionWhileTheTakersAcquireIsUnanswered(t *testing.T) {
	s := time.Second
	base := func(at time.Duration) *builder {
		b := rtCrash().with(func(m *history.Meta) { m.Assumptions.Topology = "sentinel"; m.Assumptions.DriftBound = 0.01 }).
			fault("f2", "primary-kill", 7*s+ms(900), 7*s+ms(900), false, false).
			note(history.NotePromotion+"redis-0 -> redis-1", 8*s+ms(100)).
			lost("b", history.OpAcquire, "e1", "b:7950", 7*s+ms(950))
		return b.rtTake("b", at).rtToken("b", "e1", 2)
	}
	rtDump(t, base(12*s+ms(450)), "e1")
	o, msg := rtOutcome(t, rtCheck(base(12*s+ms(450))), InvFailover)
	require.NotEqual(t, Violated, o, msg)
	o, msg = rtOutcome(t, rtCheck(base(12*s+ms(600))), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds (a false pass when this round began; found independently and closed while it ran). Another instance's unconditional renewals keep a crashed holder's value. a crashes
// at 5.5 s (rtCrash: a:10 lives until 8.013 s, a's heartbeat until 8.022 s); c, which never held e1,
// renews e1's key with a plain PEXPIRE every second from 6 s (the classic blind renewer), each answered
// 1, extending a:10 to 22.003 s. Nobody takes e1. e1 was owed at 8.022 s (deadline 8.123 s): the system's
// own writes kept it from everyone, which buys it no time. The takeover used to wait for a:10 to
// 22.003 s and failover passed; ownUntilBefore counts only a:10's writer's writes, and failover is
// violated.
func TestRedTeam2AnotherInstancesUnconditionalRenewalsBuyNoTime(t *testing.T) {
	s := time.Second
	b := rtCrash().assume(0.01).life("c", history.LifeStarted, 0).beats("c", ms(30), 20*s)
	for at := 6 * s; at < 20*s; at += s {
		b.op("c", history.OpRenew, "poll:lease:e1", history.AnyOwner, 3*s, at, at+ms(2), true, "")
	}
	o, msg := rtOutcome(t, rtCheck(b), InvFailover)
	require.Equal(t, Violated, o, msg)
	require.Contains(t, msg, "owed at 8.022s")
}
