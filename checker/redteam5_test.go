package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// Red-team histories, fifth round (docs/checker.md; the earlier rounds are redteam_test.go to
// redteam4_test.go, whose builders rtPair, rtCrash, rtTake, rtCheck, rtOutcome, rtDropOps and rt2Bad are
// used here). This round attacks what the earlier ones tried least: porcupine's model of a lease key
// (linmodel.go), fencing tokens at the resource, validity under a clock drift inside the bound, lag
// measured by several signals, and elections. Each test asserts the verdict the history deserves. Those
// marked "GAP (false pass)" or "GAP (false alarm)" fail against the checker as it stands (the model
// judges them wrongly, as said); those marked "holds" are attacks the model answered correctly.
//
// Timing throughout is the builder's (newBuilder): TTL 3 s, renewals and heartbeats every 1 s, call
// bound 300 ms, polls of 100 ms every 1 s, heartbeat TTL 3 s; detection latency D = 1 s + 300 ms =
// 1.3 s; tolerance 101 ms; cadence 1 s + 100 ms + 101 ms = 1.201 s. rtCrash: a crashes at 5.5 s, e1 is
// owed at 8.022 s, deadline 8.123 s.

// ---------------------------------------------------------------------------------------------------
// linearizability (linmodel.go)
// ---------------------------------------------------------------------------------------------------

// GAP (false pass). An unanswered renewal that a read shows landed keeps the key forever.
//
// a acquires e1 (value a) at 0, answered at 2 ms, TTL 3 s: the key expires in [3 s, 3.003 s]. a renews at
// 1 s and gets no reply (a lost call, given up at 1.3 s). The harness reads the key at 3.5 s and finds
// a; it reads it again at 15 s and finds a again. Nobody wrote the key after 1 s.
//
// What the model does: stepKey applies the unanswered renewal with ret = MaxInt64, so the state it
// leaves expires in [a+3 s, expiryHi(MaxInt64)] = [a+3 s, never]; the read at 3.5 s keeps that state
// (expLo raised to 3.5 s, expHi still never), and the read at 15 s finds the key "alive". Every key is
// linearizable.
//
// What the history proves: the read at 3.5 s found a after the acquire's own expiry (≤ 3.003 s), so the
// renewal took effect, and before 3.003 s (it renews only an unexpired key: it can only have been
// applied while the acquire's value lived). It set the expiry to at most 3.003 s + 3 s + 1 ms. A
// request lands once (a re-send after a lost reply lands within the call, before its caller gave up at
// 1.3 s, and no fault lay on a's link to hold one longer): no write after it. A key that still answers a
// at 15 s, 9 s after it expired, is no answer a key with a TTL can give. The model's "one operation
// interval" of slack is unbounded for an operation without a reply, even once a later read pins when it
// applied. Control: a read at 5.5 s that finds a is a history Redis can give (the renewal applied at
// 2.9 s keeps the key to 5.9 s).
func TestRedTeam5AnUnansweredRenewalThatLandedDoesNotKeepTheKeyForever(t *testing.T) {
	s := time.Second
	build := func(lastRead time.Duration) *builder {
		return newBuilder().life("a", history.LifeStarted, 0).
			op("a", history.OpAcquire, "poll:lease:e1", "a", 3*s, 0, ms(2), true, "").
			poll("a", "e1", ms(5), ms(105), 1).
			lost("a", history.OpRenew, "e1", "a", s).
			op("", history.OpRead, "poll:lease:e1", "", 0, 3*s+ms(500), 3*s+ms(501), true, "a").
			op("", history.OpRead, "poll:lease:e1", "", 0, lastRead, lastRead+ms(1), true, "a")
	}
	o, msg := rtOutcome(t, rtCheck(build(5*s+ms(500))), InvLinearizable)
	require.Equal(t, Pass, o, "control: the renewal may have applied at 2.9 s: %s", msg)
	o, msg = rtOutcome(t, rtCheck(build(15*s)), InvLinearizable)
	require.Equal(t, Violated, o, msg)
}

// GAP (false alarm). A release re-sent after a connection reset answers "not deleted" because its first
// send deleted.
//
// a holds e1 (rtPair(20 s) up to 5 s: value a:10, renewed at 1.01 s ... 4.01 s, each answered 2 ms
// later; polls until 4.015 s). At 4.5 s a releases a:10 (a compare-and-delete, the reference's release
// script) and stops polling; a conn-reset fault (chaos.ConnReset: every open connection of a's dropped
// at once) hits a's link at 4.501 s; the release is answered at 4.503 s: 0, "not deleted". b acquires
// e1 at 4.6 s, granted, and holds it from then.
//
// What the model does: the release is one operation (the hook sits outside go-redis's retry loop: "one
// logical call, with any re-sends after lost replies, is one operation"), answered refused. A refusal of
// a's own value is possible only when the key does not hold it; a's renewal at 4.01 s keeps it to at
// least 7.01 s. No linearization: linearizability is violated ("release(a:10) -> refused ... the key was
// then a:10").
//
// What the history proves: nothing wrong. Every instance's client re-sends a command after a lost reply
// (MaxRetries 3, sim/env.go, sim/instance_links.go), and a connection reset is a lost reply: go-redis
// retries on ECONNRESET/EOF. The first send deleted a:10; the reset took its reply; the re-send found no
// key and answered 0 — exactly what a real Redis answers, and what b's grant at 4.6 s confirms (the key
// was empty by then, though a:10 would have lived to 7.01 s). The recorder documents the re-send itself
// (history.Op.Landed: "a command the client sent more than once within one call"), and the election's
// release is marked AbsentOK for this very case, but the lease's compare-and-delete release (and a
// plain SET NX acquire, or a DEL) is modelled as a single send. Control: the same release answered 1
// (no reset) passes.
func TestRedTeam5AReleaseResentAfterAConnectionResetIsNoFalseAnswer(t *testing.T) {
	s := time.Second
	build := func(deleted, reset bool) *builder {
		b := rtPair(4*s+ms(500)).op("a", history.OpRelease, "poll:lease:e1", "a:10", 0, 4*s+ms(500), 4*s+ms(503), deleted, "").
			hold("b", "e1", 4*s+ms(600), 20*s)
		if reset {
			b.fault("f1", "conn-reset", 4*s+ms(501), 4*s+ms(501), false, false, "a")
		}
		return b
	}
	o, msg := rtOutcome(t, rtCheck(build(true, false)), InvLinearizable)
	require.Equal(t, Pass, o, "control: %s", msg)
	// The premise fails: no reset reached the call, so its refusal is the only send's answer, and b's
	// grant 100 ms later, with a's value live until 7.01 s, cannot follow it.
	o, msg = rtOutcome(t, rtCheck(build(false, false)), InvLinearizable)
	require.Equal(t, Violated, o, "without a reset: %s", msg)
	o, msg = rtOutcome(t, rtCheck(build(false, true)), InvLinearizable)
	require.Equal(t, Pass, o, msg)
	// A call whose re-send answers as its first send did gains nothing from a reset: an acquire script
	// that grants its own value again, refused while the key held that value (acquire-not-idempotent's
	// answer), is judged.
	own := rtPair(20*s).op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, 4*s+ms(500), 4*s+ms(503), false, "").
		fault("f1", "conn-reset", 4*s+ms(501), 4*s+ms(501), false, false, "a")
	o, msg = rtOutcome(t, rtCheck(own), InvLinearizable)
	require.Equal(t, Violated, o, "an idempotent acquire refused after a reset: %s", msg)
}

// ---------------------------------------------------------------------------------------------------
// fencing and single-poller at the resource
// ---------------------------------------------------------------------------------------------------

// GAP (false pass). An instance that holds nothing polls between the holder's polls, with the holder's
// token.
//
// A system whose backend calls are not modelled (a PostgreSQL advisory lock: the history holds heartbeats,
// no acquire or renewal), which reports beliefs. a believes it holds e1 from 10 ms with token 1 and never
// stops (no held=false, no deadline, no fault on a), and polls e1 with token 1 every second (k s + 15 ms)
// to the end. c, a third member, never believes it holds e1 and never asks for it; it reaches e1 once, at
// 5.5 s, presenting token 1. No poll overlaps another; no fault anywhere.
//
// What the model does: validity is skipped (no acquire or renewal: "the system's backend calls are not
// modelled"); single-holder sees one belief; stale-belief is skipped (no modelled key); fencing sees
// token 1 throughout, never lower; single-poller's zombie rule compares holdings by token whenever both
// polls carry one (newerHolding), and 1 is not newer than 1, so a's polls after c's are no zombie's. Every
// invariant passes.
//
// What the history proves: a's single holding (one belief, one token, never ended) spans [10 ms, 20 s];
// c reached the resource at 5.5 s inside it, holding nothing: two instances acted on one endpoint in one
// holding. "A poll by an instance holding no lease is a violation whoever made it" (docs/checker.md); for
// a system whose calls are not modelled the model reads a holding off the belief (a valid poll lies
// "inside its belief"), and c had none. The token c presented is no holding of its own: it is a's. Control:
// the same poll with no token is reported (single-poller falls back to the holdings' starts, and a's
// next poll reads as a zombie's).
func TestRedTeam5AnInstanceHoldingNothingPollsWithTheHoldersToken(t *testing.T) {
	s := time.Second
	build := func(token uint64) *builder {
		return newBuilder().life("a", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
			beats("a", ms(20), 20*s).beats("c", ms(25), 20*s).
			held("a", "e1", ms(10), 1, history.ReasonAcquired, 0).
			polls("a", "e1", ms(15), 20*s, s, 1).
			poll("c", "e1", 5*s+ms(500), 5*s+ms(600), token)
	}
	rep := rtCheck(build(0))
	require.NotEmpty(t, rt2Bad(rep), "control, no token: c's poll is reported")
	rep = rtCheck(build(1))
	require.NotEmpty(t, rt2Bad(rep), "c polled e1 inside a's holding, holding nothing, and nothing is reported")

	// A poll decided inside a belief and held past its end by a pause (it goes out on waking) is the
	// pause's doing (caught); without the pause the same late poll is reported.
	late := func(pause bool) *builder {
		b := newBuilder().assume(0.01, "pause").life("a", history.LifeStarted, 0).beats("a", ms(20), 20*s).
			held("a", "e1", ms(10), 1, history.ReasonAcquired, 0).polls("a", "e1", ms(15), 4*s+ms(100), s, 1).
			belief("a", "e1", 4*s+ms(400), false, 1).poll("a", "e1", 7*s+ms(1), 7*s+ms(2), 1)
		if pause {
			b.paused("p1", "a", 4*s+ms(200), 7*s)
		}
		return b
	}
	o, msg := rtOutcome(t, rtCheck(late(false)), InvValidity)
	require.Equal(t, Violated, o, "a late poll with no pause: %s", msg)
	o, msg = rtOutcome(t, rtCheck(late(true)), InvValidity)
	require.Equal(t, Caught, o, "a poll a pause held: %s", msg)
}

// ---------------------------------------------------------------------------------------------------
// validity and single-holder under a clock drift inside the bound
// ---------------------------------------------------------------------------------------------------

// GAP (false alarm). A holder whose clock runs slow, inside the drift bound, polls until its own deadline,
// which falls before the key can expire.
//
// Drift bound 0.01. A clock-drift fault on a, rate 0.99 (1 % slow: inside the bound), for the whole run.
// a acquires e1 (value a:10) at 10 ms and renews it every second; the last answered renewal is sent at
// 5.01 s (answered 5.012 s). A partition cuts a off from 5.5 s to 12 s: its renewal at 6.01 s gets no
// reply. a polls e1 every second from 15 ms to 7.015 s, and once more over [7.9 s, 8.0 s], its last: a
// believes until 5.01 s + TTL·(1 − 0.01) on its own clock, 2.97 s of its clock = 2.97 / 0.99 = 3.0 s of
// run time: until 8.01 s (its belief's deadline, in run time as the recorder converts it). b holds e2
// throughout, and takes e1 at 8.1 s.
//
// What the model does: validity entitles a to request + TTL·(1 − drift bound) of run time, 5.01 s +
// 2.97 s = 7.98 s, and reports the poll ending at 8.0 s ("past the end of its lease at 7.98s").
//
// What the history proves: a's renewal cannot have landed before it was sent, so a:10 lives in the key
// at least until 5.01 s + 3 s = 8.01 s (the partition keeps the 6.01 s renewal from landing at all, and
// b's grant at 8.1 s agrees); nobody else can be granted e1 before then, and a's poll ended at 8.0 s.
// That is exactly the guarantee the drift bound buys (lease/deadline.go: "a local clock running up to
// drift slower than Redis's sees at most TTL*(1-drift) of that TTL elapse"): a clock slow by the bound
// sees its TTL·(1 − b) end at the key's earliest expiry. The run-time window should reach request +
// TTL·(1 − b)/rate for a clock the history shows slow (rate ≥ 1 − b: at most request + TTL), not
// request + TTL·(1 − b), which only a clock running at Redis's speed stops by. (The reference hides the
// gap behind its SafetyMargin, 500 ms against TTL·b = 300 ms at spec timing; a correct system needs
// none.) Control: the same poll with a's clock at Redis's speed (no drift fault: a believes only until
// 7.98 s) is a violation.
func TestRedTeam5ASlowClockInsideTheBoundPollsUntilItsOwnDeadline(t *testing.T) {
	s := time.Second
	build := func(rate string, on ...string) *builder {
		b := newBuilder().assume(0.01).life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
			hold("b", "e2", ms(15), 20*s).beats("b", ms(25), 20*s).beats("a", ms(20), 5*s+ms(500)).
			fault("f1", "partition", 5*s+ms(500), 12*s, false, false, "a").
			op("a", history.OpAcquire, "poll:lease:e1", "a:10", 3*s, ms(10), ms(12), true, "")
		slow := 1.0
		if rate != "" {
			if len(on) == 0 {
				on = []string{"a"}
			}
			b.faultP("f0", "clock-drift", 0, 20*s, map[string]string{"rate": rate}, on...)
			slow = 0.99
		}
		deadline := func(sent time.Duration) time.Duration { return sent + time.Duration(float64(3*s)*0.99/slow) }
		b.held("a", "e1", ms(12), 1, history.ReasonAcquired, deadline(ms(10)))
		for at := s + ms(10); at < 6*s; at += s {
			b.op("a", history.OpRenew, "poll:lease:e1", "a:10", 3*s, at, at+ms(2), true, "").
				held("a", "e1", at+ms(2), 1, history.ReasonRenewed, deadline(at))
		}
		b.lost("a", history.OpRenew, "e1", "a:10", 6*s+ms(10))
		b.polls("a", "e1", ms(15), 7*s+ms(100), s, 1).poll("a", "e1", 7*s+ms(900), 8*s, 1)
		return b.hold("b", "e1", 8*s+ms(100), 20*s)
	}
	o, msg := rtOutcome(t, rtCheck(build("")), InvValidity)
	require.Equal(t, Violated, o, "control, no drift: %s", msg)
	// The premise fails: the slow clock is another instance's, or runs beyond the drift bound (outside
	// the assumptions: the poll is then judged as such, not given the clock's stretch).
	o, msg = rtOutcome(t, rtCheck(build("0.99", "b")), InvValidity)
	require.Equal(t, Violated, o, "another instance's clock: %s", msg)
	o, msg = rtOutcome(t, rtCheck(build("0.98")), InvValidity)
	require.Equal(t, Violated, o, "a clock beyond the bound: %s", msg)
	rep := rtCheck(build("0.99"))
	o, msg = rtOutcome(t, rep, InvValidity)
	require.Equal(t, Pass, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// lag
// ---------------------------------------------------------------------------------------------------

// GAP (false pass). One stall, seen by two signals in two adjacent windows, is counted twice.
//
// rtCrash: a crashes at 5.5 s; e1 is owed at 8.022 s, deadline 8.123 s. b takes it at 9.023 s (its first
// poll), 900 ms over. The harness recorded two lag samples, and no other window reached the 10 ms floor:
//   - the window [7.9 s, 8.0 s): the canary woke 545 ms late (it slept from 7.405 s; the process stalled
//     until 7.95 s);
//   - the window [8.0 s, 8.1 s): the backend ping took 610 ms (sent at 7.39 s, just before the stall; its
//     reply read when the pinger ran again, just after 8.0 s).
//
// No fault lies on the backend, so the ping counts.
//
// What the model does: lagBefore adds each sample's lateness, min(value, its interval clipped to the
// stretch): 545 ms + 610 ms = 1.155 s, which reaches the 900 ms overrun, and failover is inconclusive.
//
// What the history proves: a lateness observed at o with value v covered [o − v, o]; the canary's lay
// within [7.9 s − 545 ms, 8.0 s] = [7.355 s, 8.0 s] and the ping's within [8.0 s − 610 ms, 8.1 s] =
// [7.39 s, 8.1 s]. Their union lies within [7.355 s, 8.1 s]: 745 ms. A chain of hand-offs held up by
// overlapping stalls is released when the last of them ends, so b's takeover was delayed by 745 ms at
// the very most, less than the 900 ms it went over ("a 500 ms stall delays what waits on it by 500 ms,
// however many hand-offs wait behind it"). Counting a window's lateness once, "whichever signal saw
// it", does not stop one stall from being counted once per window whose signal saw it. Control: a
// takeover 700 ms over (b at 8.823 s), which the union can account for, is inconclusive.
func TestRedTeam5OneStallSeenByTwoSignalsIsCountedOnce(t *testing.T) {
	s := time.Second
	build := func(at time.Duration) *builder {
		return rtCrash().rtTake("b", at).withLag(
			history.LagSample{At: 7*s + ms(900), Canary: ms(545)},
			history.LagSample{At: 8 * s, Ping: ms(610)})
	}
	o, msg := rtOutcome(t, rtCheck(build(8*s+ms(823))), InvFailover)
	require.Equal(t, Inconclusive, o, "control: %s", msg)
	o, msg = rtOutcome(t, rtCheck(build(9*s+ms(23))), InvFailover)
	require.Equal(t, Violated, o, msg)
}

// ---------------------------------------------------------------------------------------------------
// elections
// ---------------------------------------------------------------------------------------------------

// holds. In an election, a leader whose term was superseded acts once more, and a standby leads without
// a grant.
//
// Kind "election", one role. a is elected (term 1, value a, its candidate ID) at 10 ms and renews every
// second; a partition cuts it off from 5.5 s to 15 s (its renewals from 6.01 s get no reply). Its last
// landed renewal (5.01 s) keeps the role's key to 8.013 s at most. b is elected at 8.1 s (term 2) and
// leads, polling with token 2, to the end. Then:
//   - "superseded": a acts on the role once more at 9.5 s with token 1 (its term-1 lease, confirmed
//     at most to 5.01 s + 3 s, ended 1.5 s before; b's term 2 began at 8.1 s);
//   - "standby": c, a standby that never asked for the role, acts on it at 9.5 s with token 2 (b's
//     term's token, which it read somewhere).
//
// What the model does, and what the history proves: the superseded leader's action lies outside any
// lease of its own (validity), arrives with a lower token after token 2 (fencing) and after the newer
// holder's (single-poller); the standby's lies outside any lease of its own ("it never asked for a lease
// of it"). Both are reported; the control (neither action) passes.
func TestRedTeam5ASupersededLeaderAndAStandbyWithoutAGrant(t *testing.T) {
	s := time.Second
	build := func(variant string) *builder {
		b := newBuilder().with(func(m *history.Meta) { m.Kind = "election"; m.Endpoints = 1 }).
			life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).life("c", history.LifeStarted, 0).
			fault("f1", "partition", 5*s+ms(500), 15*s, false, false, "a").
			op("a", history.OpAcquire, "poll:lease:role", "a", 3*s, ms(10), ms(12), true, "").
			polls("a", "role", ms(15), 5*s+ms(500), s, 1)
		for at := s + ms(10); at < 6*s; at += s {
			b.op("a", history.OpRenew, "poll:lease:role", "a", 3*s, at, at+ms(2), true, "")
		}
		for at := 6*s + ms(10); at < 15*s; at += s {
			b.lost("a", history.OpRenew, "role", "a", at)
		}
		b.op("b", history.OpAcquire, "poll:lease:role", "b", 3*s, 8*s+ms(100), 8*s+ms(102), true, "").
			polls("b", "role", 8*s+ms(105), 20*s, s, 2)
		for at := 9*s + ms(100); at < 20*s; at += s {
			b.op("b", history.OpRenew, "poll:lease:role", "b", 3*s, at, at+ms(2), true, "")
		}
		switch variant {
		case "superseded":
			b.poll("a", "role", 9*s+ms(500), 9*s+ms(600), 1)
		case "standby":
			b.poll("c", "role", 9*s+ms(500), 9*s+ms(600), 2)
		}
		return b
	}
	rep := rtCheck(build(""))
	for _, inv := range []string{InvSinglePoller, InvValidity, InvFencing, InvLinearizable} {
		o, msg := rtOutcome(t, rep, inv)
		require.Equal(t, Pass, o, "control: %s", msg)
	}
	rep = rtCheck(build("superseded"))
	for _, inv := range []string{InvSinglePoller, InvValidity, InvFencing} {
		o, msg := rtOutcome(t, rep, inv)
		require.Equal(t, Violated, o, "superseded: %s", msg)
	}
	o, msg := rtOutcome(t, rtCheck(build("standby")), InvValidity)
	require.Equal(t, Violated, o, "standby: %s", msg)
	require.Contains(t, msg, "never asked for a lease")
}

// ---------------------------------------------------------------------------------------------------
// balance across a scale change
// ---------------------------------------------------------------------------------------------------

// holds. After a scale-up, a newcomer that never gets its share leaves the steady window unbalanced.
//
// healthy(): a holds e1, e2 and b holds e3, e4 for 20 s, balance expected in the steady window [4 s,
// 18 s]. Here the steady window is [10 s, 18 s], and c starts at 6 s (a scale-up to 3 instances: each
// should hold 1..2 of the 4 endpoints). Then:
//   - "moved": a hands e2 to c at 7 s (a releases, stops polling e2 at 7 s; c acquires at 7.01 s and
//     polls e2 every second from 7.015 s): 1, 2 and 1 in the window;
//   - "starved": nothing moves; c holds 0 through the window.
//
// What the model does, and what the history proves: holdersAt counts c live from 6 s and judges every
// sample of [10 s, 18 s]: with "starved" c holds 0 < floor(4/3) = 1 at every sample, 9 unbalanced
// samples (no lag recorded, so nothing makes it inconclusive); with "moved" every instance is within
// 1..2. Reported, and the control passes.
func TestRedTeam5ANewcomerThatNeverGetsItsShare(t *testing.T) {
	s := time.Second
	build := func(moved bool) *builder {
		b := healthy().with(func(m *history.Meta) {
			m.Steady = []history.Window{{From: 10 * s, To: 18 * s}}
			m.Instances = 3
		}).life("c", history.LifeStarted, 6*s).beats("c", 6*s, 20*s)
		if moved {
			b.events = rtDropOps(b.events, "a", "poll:lease:e2", 7*s, 20*s)
			var keep []history.Event
			for _, e := range b.events {
				if e.Kind == history.KindPoll && e.Instance == "a" && e.Endpoint == "e2" && e.At >= 7*s {
					continue
				}
				keep = append(keep, e)
			}
			b.events = keep
			b.release("a", "e2", "a", 7*s).
				op("c", history.OpAcquire, "poll:lease:e2", "c", 3*s, 7*s+ms(10), 7*s+ms(12), true, "").
				belief("c", "e2", 7*s+ms(12), true, 2).
				polls("c", "e2", 7*s+ms(15), 20*s, s, 2)
			for at := 8 * s; at < 20*s; at += s {
				b.op("c", history.OpRenew, "poll:lease:e2", "c", 3*s, at, at+ms(2), true, "")
			}
		}
		return b
	}
	o, msg := rtOutcome(t, rtCheck(build(true)), InvBalance)
	require.Equal(t, Pass, o, "control: %s", msg)
	o, msg = rtOutcome(t, rtCheck(build(false)), InvBalance)
	require.Equal(t, Violated, o, msg)
	require.Contains(t, msg, "c holds 0")
}
