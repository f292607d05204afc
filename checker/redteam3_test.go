package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// Red-team histories, third round (docs/checker.md; the first two rounds are redteam_test.go and
// redteam2_test.go, whose builders rtPair, rtCrash, rtTake, rtToken, rtCheck, rtDump, rtOutcome, rtDropOps,
// rt2Bad and rt2LostPing are used here). Each test asserts the verdict the history deserves. Those marked
// "GAP" each found a gap in the model (a false pass or a false alarm, as said), now closed: the test
// failed before, and "what the model did" says how; those marked "holds" are attacks the model answered
// correctly.
//
// Timing throughout is the builder's (newBuilder): TTL 3 s, renewals and heartbeats every 1 s, call
// bound 300 ms, polls of 100 ms every 1 s, heartbeat TTL 3 s; detection latency D = 1 s + 300 ms =
// 1.3 s; tolerance 101 ms; cadence 1 s + 100 ms + 101 ms = 1.201 s; the stale-belief bound 1 s + 300 ms +
// 101 ms = 1.401 s. rtCrash: a crashes at 5.5 s, its value a:10 lives until 8.013 s and its heartbeat
// counts it a member until 8.022 s: e1 is owed at 8.022 s, deadline 8.123 s.

// ---------------------------------------------------------------------------------------------------
// stale-belief
// ---------------------------------------------------------------------------------------------------

// GAP (false pass). A one-millisecond pause lets a belief outlive its key for the whole of a partition.
//
// The second round's partitioned believer (TestRedTeam2ABeliefOutlivesItsKeyThroughAPartition), with
// pauses declared outside the assumptions and drift bound 0.01: a holds e1 (acquire at 10 ms, renewals to
// 5.01 s, answered; a belief without a deadline) and polls until 6.015 s; it is partitioned over
// [5.5 s, 15 s], its renewal at 6.01 s is dropped (given up at 6.31 s), it probes its link every second
// (PING, unanswered) and its probe at 15.01 s is answered; it reports losing e1 at 15.05 s. Here, in
// addition, a is paused for 1 ms at 12 s (the pause takes hold and a wakes at 12.001 s).
//
// What the model did: checkStaleBelief clamps the bound's start to a's own lease end (5.01 + 2.97 =
// 7.98 s) only when a was not frozen in [gap start, end of its impediment]: frozenWithin sees the 1 ms
// pause inside [8.013 s, 15.011 s], so the bound runs from 15.011 s and 15.05 − 15.011 < 1.401 s: nothing
// is reported, not even as caught. Every invariant passes.
//
// What the history proves: a was frozen 1 ms of the 7 s; it ran, and kept its clock, all the rest. Its
// value lived until 8.013 s at most (its last confirmed write, 5.01 s + TTL); a knew at 6.31 s its
// renewal had failed and its lease ran out at 7.98 s on its own clock. A 1 ms freeze can delay what a
// running process's clock tells it by 1 ms, not by 7 s: a believed 15.05 − 8.013 − 1.401 ≈ 5.6 s too
// long, and a fault whose magnitude is 1 ms explains none of it. Control: without the pause, a violation.
func TestRedTeam3ABeliefOutlivesItsKeyBehindAOneMillisecondPause(t *testing.T) {
	s := time.Second
	base := func(pause bool, stalled ...bool) *builder {
		b := newBuilder().assume(0.01, "pause").with(func(m *history.Meta) { m.Instances = 1 }).life("a", history.LifeStarted, 0).
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
		b.hold("a", "e1", 15*s+ms(100), 20*s).beats("a", 15*s+ms(120), 20*s)
		if pause {
			b.paused("p1", "a", 12*s, 12*s+ms(1))
		}
		if len(stalled) > 0 {
			// A stall hangs a's calls, not its timers: its belief ends at its deadline all the same.
			b.fault("s1", "stall", 7*s, 14*s, false, false, "a")
		}
		return b
	}
	o, msg := rtOutcome(t, rtCheck(base(false, true)), InvStaleBelief)
	require.Equal(t, Violated, o, "a stall over the lease's end: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base(false)), InvStaleBelief)
	require.Equal(t, Violated, o, "control: %s", msg)
	rep := rtCheck(base(true))
	t.Logf("the invariants that report it: %q", rt2Bad(rep))
	o, msg = rtOutcome(t, rep, InvStaleBelief)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// a takeover is the first valid poll (validWindows: a release survived by a later granted renewal)
// ---------------------------------------------------------------------------------------------------

// GAP (false pass). A poll after the poller's own answered release, while another instance held the
// lease, is taken for valid because a snapshot restore later brought the released value back.
//
// a holds e1 (hold: value a:10, renewals at k s + 10 ms to 5.01 s, polls at k s + 15 ms) and hands it
// over at 5.6 s: its belief ends and its release is answered (deleted) at 5.602 s. b acquires e1 at
// 5.65 s (granted 5.652 s, token 2) and polls it over [5.655 s, 5.695 s]. a polls e1 once more over
// [5.70 s, 5.75 s] with token 1 (no fencing). Redis is restarted from a snapshot: the snapshot at 5.5 s
// held a:10 (expiry 8.013 s), the restart at 6.2 s puts it back and drops b's value. b's renewal at
// 6.25 s is refused and b lets e1 go; a's renewal of a:10 at 6.3 s is granted (the restored value is in
// the key) and a holds e1 again from then, renewing and polling every second.
//
// What the model did: validWindows ends the window of a's renewal at 5.01 s at its release (5.6 s)
// unless survived(): a renewal of a:10 sent after the release took effect (6.3 s ≥ 5.602 s) was granted,
// and no acquire of a:10 by a came between. It concludes the release "left the value", keeps a's lease
// to 7.98 s, and a's poll at 5.70 s is valid. Every invariant passes.
//
// What the history proves: the release answered OK deleted a:10 at 5.602 s; b's grant at 5.652 s shows
// the key held b's value from then until the restore at 6.2 s (the record says as much). What put a:10
// back for the renewal at 6.3 s to find was the restore, not a release that failed. a's poll at 5.70 s
// reached the resource after a had given its lease up, inside b's: a poll outside its poller's lease.
// Without the renewal at 6.3 s (a leaves after the poll) the same poll is reported; the control without
// the poll passes everything.
func TestRedTeam3APollAfterItsReleaseIsNotMadeValidByARestore(t *testing.T) {
	s := time.Second
	base := func(stale, comesBack bool) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 20*s).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
			fault("f1", "redis-restart-from-snapshot", 5*s+ms(500), 6*s+ms(200), false, true).
			belief("a", "e1", 5*s+ms(600), false, 1).release("a", "e1", "a:10", 5*s+ms(600)).
			op("b", history.OpAcquire, "poll:lease:e1", "b:5650", 3*s, 5*s+ms(650), 5*s+ms(652), true, "").
			held("b", "e1", 5*s+ms(652), 2, history.ReasonAcquired, 0).
			poll("b", "e1", 5*s+ms(655), 5*s+ms(695), 2).
			op("b", history.OpRenew, "poll:lease:e1", "b:5650", 3*s, 6*s+ms(250), 6*s+ms(252), false, "").
			belief("b", "e1", 6*s+ms(252), false, 2)
		if comesBack {
			b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, 6*s+ms(300), 6*s+ms(302), true, "").
				held("a", "e1", 6*s+ms(302), 3, history.ReasonRenewed, 0).
				polls("a", "e1", 6*s+ms(350), 20*s, s, 3)
			for at := 7*s + ms(300); at < 20*s; at += s {
				b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
			}
		}
		if stale {
			b.poll("a", "e1", 5*s+ms(700), 5*s+ms(750), 1)
		}
		return b
	}
	require.Empty(t, rt2Bad(rtCheck(base(false, true))), "control: without the poll at 5.7 s")
	o, msg := rtOutcome(t, rtCheck(base(true, false)), InvValidity)
	require.Equal(t, Violated, o, "control: a never comes back: %s", msg)
	require.Contains(t, msg, "a polled e1 at 5.7s with no lease")
	rep := rtCheck(base(true, true))
	t.Logf("the invariants that report it: %q", rt2Bad(rep))
	o, msg = rtOutcome(t, rep, InvValidity)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// the fleet waits for an assignee
// ---------------------------------------------------------------------------------------------------

// GAP (false alarm). The endpoint moves a second time, to a member that joined after the first move and
// could not act: the fleet may wait for it until its heartbeat runs out, as for the first.
//
// a crashes at 5.5 s (rtCrash: heartbeat counted until 8.022 s). c, a member from the start, crashes at
// 7.5 s; its last heartbeat (7.03 s, answered 7.031 s) counts it until 10.032 s. e starts at 9 s,
// heartbeats at 9.03 s and 10.03 s (answered), and crashes at 10.2 s, 1.2 s after it joined: before it
// could act (a member is ready a detection latency, 1.3 s, after it joins: 10.3 s). Its heartbeat counts
// it until 13.032 s. b, healthy throughout, takes e1 at 13.1 s.
//
// What the model did: assignees adds the members at a's heartbeat expiry (8.022 s): b and c; it waits
// for c (gone, not ready) until its heartbeat runs out, 10.032 s, and owes e1 then (deadline 10.133 s).
// e, who joined at 9 s, is no assignee; b's takeover at 13.1 s is reported 3 s late.
//
// What the history proves: a rendezvous fleet assigns e1 among the members it counts. At 8.022 s that is
// {b, c}: it may be c's, which cannot act, and the model rightly waits for c's heartbeat. At 10.032 s the
// others count c gone and assign e1 afresh among {b, e}: e's heartbeat (landed 10.031 s) counts it, so
// e1 may be e's — the same move, by the same premise ("the others counted the holder gone when its
// heartbeat ran out"), of the endpoint c held for the fleet. e could not act before it crashed (it
// crashed before it was ready), so the fleet may wait for it until its heartbeat runs out at 13.032 s:
// deadline 13.133 s. b at 13.1 s is in time; at 13.2 s it is late. Control: without e, 13.1 s is late
// and 10.1 s in time (the first wait holds).
func TestRedTeam3TheFleetWaitsForAMemberThatJoinedBeforeTheSecondMove(t *testing.T) {
	s := time.Second
	base := func(joiner bool, at time.Duration) *builder {
		b := rtCrash().life("c", history.LifeStarted, 0).beats("c", ms(30), 7*s+ms(500)).
			fault("f2", "crash", 7*s+ms(500), 7*s+ms(500), true, false, "c").life("c", history.LifeCrashed, 7*s+ms(500))
		if joiner {
			b.life("e", history.LifeStarted, 9*s).beats("e", 9*s+ms(30), 10*s+ms(200)).
				fault("f3", "crash", 10*s+ms(200), 10*s+ms(200), true, false, "e").life("e", history.LifeCrashed, 10*s+ms(200))
		}
		return b.rtTake("b", at).rtToken("b", "e1", 2)
	}
	o, msg := rtOutcome(t, rtCheck(base(false, 10*s+ms(100))), InvFailover)
	require.Equal(t, Pass, o, "control: the fleet waits for c: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base(false, 13*s+ms(100))), InvFailover)
	require.Equal(t, Violated, o, "control: without e nothing holds e1 past 10.133 s: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base(true, 13*s+ms(200))), InvFailover)
	require.Equal(t, Violated, o, "past e's heartbeat and the tolerance: %s", msg)
	rtDump(t, base(true, 13*s+ms(100)), "e1")
	o, msg = rtOutcome(t, rtCheck(base(true, 13*s+ms(100))), InvFailover)
	require.Equal(t, Pass, o, msg)
}

// GAP (false pass). Two impeded members extend each other: the wait for a member that could act when
// the endpoint moved is renewed by an impediment that began later.
//
// a crashes at 5.5 s (e1 moves at 8.022 s). c is partitioned over [7.5 s, 10 s]: its heartbeat at 8.03 s is
// dropped (given up 8.33 s), it probes at 9.03 s (unanswered) and heartbeats, answered, from 10.03 s; its
// heartbeat of 7.03 s counts it until 10.032 s and the next lands at 10.031 s, so it is counted
// throughout. It can act again at 10 + 1.3 = 11.3 s. d is healthy until 10.5 s, then partitioned over
// [10.5 s, 12.5 s] (its heartbeat at 11.035 s dropped, a probe at 12.035 s unanswered, heartbeats answered
// again from 13.035 s), counted throughout as well. b takes e1 at 13.5 s.
//
// What the model did: the takeover loop evaluates every assignee's wait at the moving owed: c's wait
// moves owed to 11.3 s; then waitFor(d, 11.3 s) finds d impeded (since 10.5 s) and moves owed to d's
// readiness, 12.5 + 1.3 = 13.8 s (deadline 13.901 s). b at 13.5 s passes; so does every invariant.
//
// What the history proves: e1 moved once, at 8.022 s, and no membership changed after (c, d and b were
// counted throughout): it went to one of b, c, d. Had it gone to d, d could act then (unimpeded since the
// start) and had until 8.123 s; had it gone to c, c could act at 11.3 s and had until 11.401 s; b, until
// 8.123 s. "Until it can act": once an assignee could act, an impediment that befalls it later does not
// renew the fleet's wait. In every world e1 was owed by 11.401 s; b's takeover at 13.5 s is late.
// Control: without d's partition, 13.5 s is late (owed at 11.3 s).
func TestRedTeam3AnAssigneeThatCouldActWhenTheEndpointMovedIsNotWaitedForLater(t *testing.T) {
	s := time.Second
	base := func(dCut bool) *builder {
		b := rtCrash().life("c", history.LifeStarted, 0).life("d", history.LifeStarted, 0).
			beats("c", ms(30), 7*s+ms(500)).fault("f2", "partition", 7*s+ms(500), 10*s, false, false, "c").
			lostBeat("c", 8*s+ms(30)).rt2LostPing("c", 9*s+ms(30)).beats("c", 10*s+ms(30), 20*s)
		if dCut {
			b.beats("d", ms(35), 10*s+ms(500)).fault("f3", "partition", 10*s+ms(500), 12*s+ms(500), false, false, "d").
				lostBeat("d", 11*s+ms(35)).rt2LostPing("d", 12*s+ms(35)).beats("d", 13*s+ms(35), 20*s)
		} else {
			b.beats("d", ms(35), 20*s)
		}
		return b.rtTake("b", 13*s+ms(500)).rtToken("b", "e1", 2)
	}
	o, msg := rtOutcome(t, rtCheck(base(false)), InvFailover)
	require.Equal(t, Violated, o, "control: %s", msg)
	require.Contains(t, msg, "owed at 11.3s")
	rtDump(t, base(true), "e1")
	rep := rtCheck(base(true))
	t.Logf("the invariants that report it: %q", rt2Bad(rep))
	o, msg = rtOutcome(t, rep, InvFailover)
	require.Equal(t, Violated, o, msg)
}

// GAP (false pass). Refused acquires keep a crashed member "counted on" by the fleet after its heartbeat
// ran out.
//
// a crashes at 5.5 s (e1 moves at 8.022 s). c heartbeats until 4.03 s (its heartbeat loop stops there: its
// heartbeat key, landed 4.031 s, expires at 7.032 s) but goes on trying to acquire e2, which b holds,
// every second from 1.04 s to 7.04 s: each SET NX is answered refused. c crashes at 7.9 s. b takes e1 at
// 10.05 s.
//
// What the model did: presence counts every write of the instance, and writes() counts every acquire,
// refused or not; a refused acquire answered at 7.042 s "keeps" c a member until 10.043 s. At a's
// heartbeat expiry c is an assignee, gone, not ready: the fleet waits for it until 10.043 s, and b's
// takeover at 10.05 s passes. Every invariant passes.
//
// What the history proves: a refused SET NX writes nothing: it creates no key and extends none. c's
// last write that may have kept anything of c's in Redis was its heartbeat of 4.03 s, which expired at
// 7.032 s: from then nobody could count c a member, however membership is read from Redis. When e1 moved
// at 8.022 s only b was counted; b could act, and e1 was owed at 8.022 s (deadline 8.123 s): b at 10.05 s
// is late. Control: the same history without c's refused acquires is reported.
func TestRedTeam3RefusedAcquiresKeepNoMemberCounted(t *testing.T) {
	s := time.Second
	base := func(tries bool) *builder {
		b := rtCrash().life("c", history.LifeStarted, 0).beats("c", ms(30), 4*s+ms(500)).
			fault("f2", "crash", 7*s+ms(900), 7*s+ms(900), true, false, "c").life("c", history.LifeCrashed, 7*s+ms(900))
		if tries {
			for at := s + ms(40); at < 7*s+ms(900); at += s {
				b.op("c", history.OpAcquire, "poll:lease:e2", "c:"+at.String(), 3*s, at, at+ms(2), false, "")
			}
		}
		return b.rtTake("b", 10*s+ms(50)).rtToken("b", "e1", 2)
	}
	o, msg := rtOutcome(t, rtCheck(base(false)), InvFailover)
	require.Equal(t, Violated, o, "control: %s", msg)
	rtDump(t, base(true), "e1")
	rep := rtCheck(base(true))
	t.Logf("the invariants that report it: %q", rt2Bad(rep))
	o, msg = rtOutcome(t, rep, InvFailover)
	require.Equal(t, Violated, o, msg)
}

// GAP (false pass). On a cluster, blind heartbeats keep a member that cannot act counted on for as long as
// its link is half-cut, and nothing reports them.
//
// Cluster topology. a crashes at 5.5 s (e1 moves at 8.022 s). c's replies are dropped over [6 s, 16 s] (a
// one-way partition: its requests land). c heartbeats every second all the same, each unanswered (given up
// a call bound later) and each landing: the others count it throughout. It is answered again from
// 16.03 s. b takes e1 at 17.35 s.
//
// What the model did: c is a member at a's heartbeat expiry and impeded until 16 s: the fleet waits
// for it until it is ready, 17.3 s (deadline 17.401 s), and b passes. blind-write is skipped on a
// cluster ("an instance's calls go to several nodes"). Every invariant passes.
//
// What the history proves: every one of c's heartbeats wrote the same key, poll:node:c, which lives in one
// slot on one node; no slot moved and no node failed over in the run. From its heartbeat at 7.03 s on
// (sent 700 ms after its caller gave up on the one at 6.03 s, with no reply to anything since) c wrote
// blind to the very node that had stopped answering it, exactly as the single-node history does — which
// blind-write reports (control). The skip's premise (the calls went to several nodes) fails for
// writes to one key. Those blind writes are what kept c counted: a c that probed instead (control) is
// counted only until its last landed heartbeat runs out (6.031 + 3 s), and b's takeover at 17.35 s is
// then reported late.
func TestRedTeam3BlindHeartbeatsOnAClusterKeepAMemberCounted(t *testing.T) {
	s := time.Second
	base := func(topology string, blind bool) *builder {
		b := rtCrash().assume(0.01).with(func(m *history.Meta) { m.Assumptions.Topology = topology }).
			life("c", history.LifeStarted, 0).beats("c", ms(30), 6*s).
			fault("f2", "one-way-partition", 6*s, 16*s, false, false, "c").lostBeat("c", 6*s+ms(30))
		for at := 7*s + ms(30); at < 16*s; at += s {
			if blind {
				b.lostBeat("c", at)
			} else {
				b.rt2LostPing("c", at)
			}
		}
		return b.beats("c", 16*s+ms(30), 20*s).rtTake("b", 17*s+ms(350)).rtToken("b", "e1", 2)
	}
	o, msg := rtOutcome(t, rtCheck(base("single", true)), InvBlindWrite)
	require.Equal(t, Violated, o, "control: on a single node: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base("cluster", false)), InvFailover)
	require.Equal(t, Violated, o, "control: c probes instead: %s", msg)
	rep := rtCheck(base("cluster", true))
	t.Logf("the invariants that report it: %q", rt2Bad(rep))
	o, msg = rtOutcome(t, rep, InvBlindWrite)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// what a value's TTL buys
// ---------------------------------------------------------------------------------------------------

// GAP (false alarm, and an overflowed deadline). A PEXPIRE sets the TTL of a value written without one;
// the record lets it live for ever, and the takeover's deadline overflows.
//
// a acquires e1 in two steps, as many lock clients do: SET a:10 NX with no TTL at 10 ms (answered), then
// a renewal (PEXPIRE 3000, conditional on a:10) at 13 ms (answered OK), and renews every second (k s +
// 10 ms, answered) to the end; it polls every second from 15 ms to the end. One heartbeat of a's at 5.2 s
// goes unanswered (a lost packet; given up 5.5 s). b holds e2 throughout.
//
// What the model did: ttlOf gives the TTL-less acquire an infinite life, and a renewal only ever
// extends (max), so a:10 "may be in the key" for ever. The lost heartbeat ends a's holding at 5.5 s
// (no cadence owed); the takeover waits for a:10 until history.Infinity, and its deadline, Infinity +
// the tolerance, overflows to a negative duration, which the gap [5.015 s, 6.015 s] is "later" than:
// liveness reports "e1 was not polled for 1s ... owed by -2562047h47m16.754s".
//
// What the history proves: PEXPIRE sets a key's TTL, shortening an infinite one; answered OK at 14 ms it
// left a:10 with 3 s, and each renewal after likewise: the value could never outlive its last renewal by
// more than a TTL. a polled every second, within its cadence; nothing is late. Control: the same with a
// TTL on the acquire passes. And a crash (the second case) is owed at the expiry the PEXPIREs set, not
// at a deadline that overflowed.
func TestRedTeam3APEXPIRESetsTheTTLOfAValueWrittenWithoutOne(t *testing.T) {
	s := time.Second
	base := func(acquireTTL time.Duration, cut time.Duration) *builder {
		b := newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).
			op("a", history.OpAcquire, "poll:lease:e1", "a:10", acquireTTL, ms(10), ms(12), true, "").
			op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, ms(13), ms(14), true, "").
			held("a", "e1", ms(14), 1, history.ReasonAcquired, 0).
			polls("a", "e1", ms(15), cut, s, 1)
		for at := s + ms(10); at < cut; at += s {
			b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "")
		}
		return b
	}
	healthy := func(ttl time.Duration) *builder {
		return base(ttl, 20*s).beats("a", ms(20), 5*s).lostBeat("a", 5*s+ms(200)).beats("a", 6*s+ms(20), 20*s)
	}
	t.Run("healthy", func(t *testing.T) {
		require.Empty(t, rt2Bad(rtCheck(healthy(3*s))), "control: the acquire carries its TTL")
		rep := rtCheck(healthy(0))
		t.Logf("the invariants that report it: %q", rt2Bad(rep))
		require.Empty(t, rt2Bad(rep))
	})
	t.Run("crashed", func(t *testing.T) {
		crashed := base(0, 5*s+ms(500)).beats("a", ms(20), 5*s+ms(500)).
			fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500))
		o, msg := rtOutcome(t, rtCheck(crashed), InvFailover)
		require.Equal(t, Violated, o, msg)
		require.Contains(t, msg, "owed at 8.022s", "the deadline the PEXPIREs set, not an overflow")
	})
}

// GAP (false pass). Writes with a TTL ten times the lease TTL keep a crashed holder's endpoint for ten
// times the failover bound.
//
// rtCrash, except that every write of a's to e1's key carries a TTL of 30 s where the run's lease TTL is
// 3 s (history.Meta.LeaseTTL; the failover bound SpecFailoverBound(3 s)). a crashes at 5.5 s; nobody
// polls e1 again in the 14.5 s left of the run.
//
// What the model did: the record lives each value for the TTL its write carries (ttlOf), so a:10 "may
// be in the key" until 35.01 s; the takeover waits for it (not stale: its writer saw it granted), past
// the run: failover passes, and so does every invariant. (The confirmed lease, validWindows, and the
// stale-value clearing, believedUntil, both cap a write's TTL at the run's; the record does not.)
//
// What the history proves: the system wrote leases ten times longer than the TTL it declares, and a
// crashed holder's endpoint went unpolled for 14.5 s where the specification's bound — crash, TTL from
// the last write, heartbeat, tolerance — gives 8.123 s. The TTL the specification bounds is the declared
// one; a value that outlives it by the system's own writes is the system's doing, as another instance's
// PEXPIRE is (TestAnotherInstancesExtensionBuysNoTime), and buys it no time. Control: with 3 s TTLs,
// the same history is reported.
func TestRedTeam3AWriteWithATTLBeyondTheLeaseTTLBuysNoTime(t *testing.T) {
	s := time.Second
	o, msg := rtOutcome(t, rtCheck(rtCrash()), InvFailover)
	require.Equal(t, Violated, o, "control: %s", msg)
	b := rtCrash()
	for i := range b.events {
		if e := &b.events[i]; e.Op != nil && e.Instance == "a" && e.Endpoint == "e1" && e.Op.TTL > 0 {
			e.Op.TTL = 30 * s
		}
	}
	rtDump(t, b, "e1")
	rep := rtCheck(b)
	t.Logf("the invariants that report it: %q", rt2Bad(rep))
	o, msg = rtOutcome(t, rep, InvFailover)
	require.Equal(t, Violated, o, msg)
}

// holds. A heartbeat held on the wire and landing after the member's key ran out does not bridge the gap:
// a member whose presence lapsed is not waited for because a late write of its own revives it later.
//
// a crashes at 5.5 s (e1 moves at 8.022 s). c heartbeats until 5.03 s (landed 5.031 s: counted until
// 8.032 s); its heartbeat at 6.03 s is held by a 4 s hold on its requests over [6 s, 6.5 s] (unanswered,
// given up 6.33 s) and lands at 10.03 s at the earliest; c crashes at 6.5 s. The others count c until
// 8.032 s, then not, until the held write lands and counts it again from 10.03 s. The fleet may wait for
// c (gone) only until 8.032 s: e1 is owed then, deadline 8.133 s. b takes e1 at 8.1 s: in time; at
// 10.2 s: late. The model reads presence as a stretch that ends where c's writes stop keeping it, and
// does not join it to the later one.
func TestRedTeam3ALateLandingHeartbeatDoesNotBridgeALapsedPresence(t *testing.T) {
	s := time.Second
	base := func(at time.Duration) *builder {
		return rtCrash().life("c", history.LifeStarted, 0).beats("c", ms(30), 5*s+ms(500)).
			fault("f2", "slow-requests", 6*s, 6*s+ms(500), false, false, "c").withParams("delay", "4s").
			lostBeat("c", 6*s+ms(30)).
			fault("f3", "crash", 6*s+ms(500), 6*s+ms(500), true, false, "c").life("c", history.LifeCrashed, 6*s+ms(500)).
			rtTake("b", at).rtToken("b", "e1", 2)
	}
	o, msg := rtOutcome(t, rtCheck(base(8*s+ms(100))), InvFailover)
	require.Equal(t, Pass, o, msg)
	rtDump(t, base(10*s+ms(200)), "e1")
	o, msg = rtOutcome(t, rtCheck(base(10*s+ms(200))), InvFailover)
	require.Equal(t, Violated, o, msg)
	require.Contains(t, msg, "owed at 8.032s")
}

// GAP (false pass). A fault of one shard of a cluster is taken to hold a call to another.
//
// Cluster topology. a holds e1 and crashes at 5.5 s (e1 owed at 8.022 s). b heartbeats until 7.5 s
// and sends one call, a renewal of e2's key (slot 4601), at 7.6 s that goes unanswered (given up
// 7.9 s); then it is silent until it takes e1 at 11 s. The primary of the third shard (slots
// 10923-16383: neither e1's key, slot 8602, nor e2's) is killed over [7.5 s, 12 s].
//
// What the model did: explained() let any backend fault window explain an unanswered call, whatever
// its key: b was impeded over the shard's whole outage, ready at 12 + 1.3 s, and the fleet owed e1
// only then (deadline 13.401 s); b at 11 s passed.
//
// What the history proves: the shard that failed serves neither key; b's call went to a live shard,
// and shows b impeded only until its caller gave up (7.9 s). b was ready at 9.2 s, and e1 was owed
// then (deadline 9.301 s): b at 11 s is late. Control: the same fault on the shard of e2's key
// (0-5460) explains the call, and 11 s is in time.
func TestRedTeam3AFaultOfAnotherShardDoesNotImpedeACall(t *testing.T) {
	s := time.Second
	base := func(slots string) *builder {
		b := newBuilder().assume(0.01).with(func(m *history.Meta) { m.Assumptions.Topology = "cluster" }).
			life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("a", "e1", ms(10), 5*s+ms(500)).beats("a", ms(20), 5*s+ms(500)).
			fault("f1", "crash", 5*s+ms(500), 5*s+ms(500), true, false, "a").life("a", history.LifeCrashed, 5*s+ms(500)).
			beats("b", ms(25), 7*s+ms(500)).lost("b", history.OpRenew, "e2", "b:1", 7*s+ms(600)).
			faultP("f2", "shard-primary-kill", 7*s+ms(500), 12*s, map[string]string{ShardSlotsParam: slots})
		return b.rtTake("b", 11*s).rtToken("b", "e1", 2)
	}
	o, msg := rtOutcome(t, rtCheck(base("0-5460")), InvFailover)
	require.Equal(t, Pass, o, "control: the fault of e2's shard holds b's call: %s", msg)
	o, msg = rtOutcome(t, rtCheck(base("10923-16383")), InvFailover)
	require.Equal(t, Violated, o, msg)
}
