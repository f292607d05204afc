package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestValidity(t *testing.T) {
	s := time.Second
	ttl := 3 * s
	key := "poll:lease:e1"
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		bad     int
		msg     string
	}{
		{
			name:    "polls inside acquire and renewals",
			b:       healthy(),
			outcome: Pass, msg: "all 80 polls",
		},
		{
			name: "polls go on after renewals stop",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				polls("a", "e1", ms(10), 5*s, s, 1),
			outcome: Violated, bad: 2, msg: "with no lease",
		},
		{
			name: "a renewal whose reply was lost is no renewal",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				unknownOp("a", history.OpRenew, key, "a", ttl, s).
				polls("a", "e1", ms(10), 4*s, s, 1),
			outcome: Violated, bad: 1,
		},
		{
			name: "an unconditional renewal confirmed inside the sender's lease carries it on",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				op("a", history.OpRenew, key, history.AnyOwner, ttl, 2*s, 2*s+ms(5), true, "").
				op("a", history.OpRenew, key, history.AnyOwner, ttl, 4*s, 4*s+ms(5), true, "").
				polls("a", "e1", ms(10), 6*s, s, 1),
			outcome: Pass, msg: "all 6 polls",
		},
		{
			name: "an unconditional renewal after the sender's lease ended grants nothing",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				op("a", history.OpRenew, key, history.AnyOwner, ttl, 3*s+ms(100), 3*s+ms(105), true, "").
				poll("a", "e1", 3*s+ms(200), 3*s+ms(300), 1),
			outcome: Violated, bad: 1, msg: "with no lease",
		},
		{
			name: "another instance's unconditional renewal is not the poller's",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				op("b", history.OpRenew, key, history.AnyOwner, ttl, 2*s, 2*s+ms(5), true, "").
				poll("a", "e1", 3*s+ms(200), 3*s+ms(300), 1),
			outcome: Violated, bad: 1, msg: "with no lease",
		},
		{
			name: "a poll that outlasts the lease",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				poll("a", "e1", 2*s, 3*s+ms(1), 1),
			outcome: Violated, bad: 1, msg: "past the end of its lease",
		},
		{
			name: "a poll cut at the deadline may end a little late, never past the key's expiry",
			b: newBuilder().assume(0.1).op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				add(history.Event{Kind: history.KindPoll, At: 2 * s, End: 2*s + ms(900), Instance: "a", Endpoint: "e1",
					Poll: &history.Poll{Token: 1, Outcome: history.PollCancelled}}).
				add(history.Event{Kind: history.KindPoll, At: 2*s + ms(500), End: 3*s + ms(10), Instance: "a", Endpoint: "e1",
					Poll: &history.Poll{Token: 1, Outcome: history.PollCancelled}}),
			outcome: Violated, bad: 1, msg: "past the end of its lease",
		},
		{
			name: "a poll before the acquire's reply",
			b: newBuilder().op("a", history.OpAcquire, key, "a", ttl, 0, ms(50), true, "").
				poll("a", "e1", ms(20), ms(40), 1),
			outcome: Violated, bad: 1, msg: "before any acquisition",
		},
		{
			name: "a refused acquire grants nothing",
			b: newBuilder().op("b", history.OpAcquire, key, "b", ttl, 0, ms(5), true, "").
				op("a", history.OpAcquire, key, "a", ttl, ms(10), ms(15), false, "").
				op("a", history.OpAcquire, "poll:lease:e2", "a", ttl, 0, ms(5), true, "").
				poll("a", "e1", ms(20), ms(40), 1),
			outcome: Violated, bad: 1,
		},
		{
			name: "the drift bound shortens the lease",
			b: newBuilder().assume(0.1).op("a", history.OpAcquire, key, "a", ttl, 0, ms(5), true, "").
				poll("a", "e1", 2*s+ms(650), 2*s+ms(690), 1).poll("a", "e1", 2*s+ms(750), 2*s+ms(760), 1),
			outcome: Violated, bad: 1,
		},
		{
			name: "a shorter TTL set by the operation shortens the lease",
			b: newBuilder().op("a", history.OpAcquire, key, "a", s, 0, ms(5), true, "").
				poll("a", "e1", 2*s, 2*s+ms(50), 1),
			outcome: Violated, bad: 1,
		},
		{
			name: "an owner value per holding names its instance",
			b: newBuilder().op("a", history.OpAcquire, key, "a:7f3e", ttl, 0, ms(5), true, "").
				op("a", history.OpRenew, key, "a:7f3e", ttl, s, s+ms(5), true, "").
				polls("a", "e1", ms(10), 4*s, s, 1),
			outcome: Pass,
		},
		{
			name: "another instance's owner value grants nothing",
			b: newBuilder().life("ab", history.LifeStarted, 0).op("a", history.OpAcquire, key, "ab", ttl, 0, ms(5), true, "").
				poll("a", "e1", ms(10), ms(20), 1),
			outcome: Violated, bad: 1, msg: "none of its acquisitions",
		},
		{
			// A library's own random token (redis-py's Lock, redlock) names no instance: the instance that
			// sent the acquire and saw it succeed holds it.
			name: "an opaque owner value is its sender's",
			b: newBuilder().op("a", history.OpAcquire, key, "3f9c2a7d", ttl, 0, ms(5), true, "").
				poll("a", "e1", ms(10), ms(20), 1),
			outcome: Pass, msg: "all 1 polls",
		},
		{
			// Whoever polls without a lease polls unsafely: an instance that never asked for the
			// endpoint is judged like any other (it used to be left out).
			name: "a poller that never asked for the endpoint is a violation",
			b: newBuilder().op("a", history.OpAcquire, "poll:lease:e2", "a", ttl, 0, ms(5), true, "").
				poll("a", "e1", ms(10), ms(20), 1),
			outcome: Violated, bad: 1, msg: "it never asked for a lease of it",
		},
		{
			name:    "no modelled operations at all",
			b:       newBuilder().poll("a", "e1", 0, ms(10), 0),
			outcome: Skipped, msg: "no acquire or renew operations",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resultOf(t, Check(tc.b.build(), DefaultOptions()), InvValidity)
			require.Equal(t, tc.outcome, r.Outcome, allText(r))
			require.Len(t, r.Violations, tc.bad, allText(r))
			require.Contains(t, allText(r), tc.msg)
			for _, v := range r.Violations {
				require.True(t, v.ReachedResource)
				require.Equal(t, []string{"a"}, v.Instances)
			}
		})
	}
}

func TestStalePoll(t *testing.T) {
	s := time.Second
	base := func() *builder {
		return newBuilder().with(func(m *history.Meta) { m.Fencing = true }).
			poll("a", "e1", 0, ms(100), 1).poll("b", "e1", s, s+ms(100), 2)
	}
	tests := []struct {
		name         string
		b            *builder
		outcome      Outcome
		bad, caught  int
		msg          string
		singlePoller Outcome
	}{
		{"no refusals", base(), Pass, 0, 0, "no stale poll", Pass},
		{"a refusal inside the assumptions", base().assume(0.01).refused("a", "e1", 2*s, 1, 2),
			Violated, 1, 0, "no fault outside", Pass},
		{"a refusal in an older history", base().refused("a", "e1", 2*s, 1, 2), Caught, 0, 1, "records no assumptions", Pass},
		{"a refusal a declared fault explains", base().assume(0.01, "pause").paused("f1", "a", ms(500), ms(1900)).
			refused("a", "e1", 2*s, 1, 2), Caught, 0, 1, "expected outside the assumptions (f1 pause)", Pass},
		{"a refusal after a backend fault outside the assumptions", base().assume(0.01, "redis-restart").
			fault("f1", "redis-restart", ms(500), ms(600), false, true).refused("a", "e1", 2*s, 1, 2), Caught, 0, 1, "f1 redis-restart", Pass},
		{"a refusal long after the outside fault", base().assume(0.01, "pause").fault("f1", "pause", ms(100), ms(200), false, false, "a").
			refused("a", "e1", 5*s, 1, 2), Violated, 1, 0, "no fault outside", Pass},
		{"no fencing", newBuilder().poll("a", "e1", 0, ms(100), 0), Skipped, 0, 0, "did not check", Pass},
		{"fencing, but no tokens", newBuilder().with(func(m *history.Meta) { m.Fencing = true }).
			poll("a", "e1", 0, ms(100), 0).poll("b", "e1", s, s+ms(100), 0), Skipped, 0, 0, "no poll carried a fencing token", Pass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(tc.b.build(), DefaultOptions())
			r := resultOf(t, rep, InvStalePoll)
			require.Equal(t, tc.outcome, r.Outcome, allText(r))
			require.Len(t, r.Violations, tc.bad)
			require.Len(t, r.Caught, tc.caught)
			require.Contains(t, allText(r)+caughtText(r), tc.msg)
			sp := resultOf(t, rep, InvSinglePoller)
			require.Equal(t, tc.singlePoller, sp.Outcome, "a refused poll never reached the resource")
			require.Empty(t, sp.Violations)
		})
	}
}

func TestFencingAcrossWipe(t *testing.T) {
	s := time.Second
	acq := history.ReasonAcquired
	build := func(after uint64) history.History {
		return newBuilder().poll("a", "e1", ms(10), ms(20), 1).
			held("a", "e1", 0, 1, acq, 0).belief("a", "e1", 2*s, false, 1).
			fault("f1", "redis-restart", 3*s, 4*s, false, true).
			held("a", "e1", 5*s, after, acq, 0).build()
	}
	r := resultOf(t, Check(build(1), DefaultOptions()), InvFencing)
	require.Equal(t, Violated, r.Outcome, allText(r))
	require.Len(t, r.Violations, 1)
	require.Contains(t, r.Violations[0].Message, "after the backend was wiped (f1 redis-restart")

	r = resultOf(t, Check(build(2), DefaultOptions()), InvFencing)
	require.Equal(t, Pass, r.Outcome, allText(r))
	require.Contains(t, r.Message, "1 acquisitions after 1 backend wipes")

	// Without a wipe, reporting the holding one already has again is fine.
	h := newBuilder().poll("a", "e1", ms(10), ms(20), 1).held("a", "e1", 0, 1, acq, 0).
		held("a", "e1", 5*s, 1, acq, 0).build()
	require.Equal(t, Pass, resultOf(t, Check(h, DefaultOptions()), InvFencing).Outcome)

	// A token seen on a poll before the wipe counts as granted before it.
	h = newBuilder().poll("a", "e1", ms(10), ms(20), 4).
		fault("f1", "redis-restart", 3*s, 4*s, false, true).held("b", "e1", 5*s, 3, acq, 0).build()
	require.Equal(t, Violated, resultOf(t, Check(h, DefaultOptions()), InvFencing).Outcome)
}

// A grant that WAIT did not confirm (not replicated) is no confirmed lease: polls that rest on it lie
// outside the poller's lease.
func TestValidityIgnoresGrantsWAITDidNotConfirm(t *testing.T) {
	s := time.Second
	key := "poll:lease:e1"
	b := newBuilder().op("a", history.OpAcquire, key, "a", 3*s, 0, ms(5), true, "").
		polls("a", "e1", ms(10), 2*s, s, 1)
	b.events[len(b.events)-3].Op.NotReplicated = true // the acquire
	r := resultOf(t, Check(b.build(), DefaultOptions()), InvValidity)
	require.Equal(t, Violated, r.Outcome, r.Message)
	require.Len(t, r.Violations, 2)
}
