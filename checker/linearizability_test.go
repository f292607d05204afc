package checker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

const key = "poll:lease:e1"

// linOnly returns a builder with one poll, so the assumptions hold, for histories that exercise the model.
func linOnly() *builder { return newBuilder().poll("a", "e1", 0, ms(1), 0) }

// absentOKRelease adds a release of key by inst that also succeeds when the key is gone.
func (b *builder) absentOKRelease(inst string, at, end time.Duration, ok bool) *builder {
	b.op(inst, history.OpRelease, key, inst, 0, at, end, ok, "")
	b.events[len(b.events)-1].Op.AbsentOK = true
	return b
}

func TestLinearizability(t *testing.T) {
	ttl := time.Second
	acq, ren, rel, read := history.OpAcquire, history.OpRenew, history.OpRelease, history.OpRead
	tests := []struct {
		name    string
		b       *builder
		outcome Outcome
		at      time.Duration // where the violation is located
	}{
		{
			name: "sequential lifecycle",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("a", ren, key, "a", ttl, ms(500), ms(510), true, "").
				op("b", acq, key, "b", ttl, ms(600), ms(610), false, "").
				op("b", read, key, "", 0, ms(700), ms(710), true, "a").
				op("a", rel, key, "a", 0, ms(800), ms(810), true, "").
				op("b", acq, key, "b", ttl, ms(900), ms(910), true, "").
				op("a", ren, key, "a", ttl, ms(950), ms(960), false, ""),
			outcome: Pass,
		},
		{
			// Redis counts a key expired only once its millisecond clock has passed the expiry.
			name: "a refusal within Redis's clock tick after the expiry",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", acq, key, "b", ttl, ttl+ms(10)+300*time.Microsecond, ttl+ms(10)+400*time.Microsecond, false, ""),
			outcome: Pass,
		},
		{
			// Redlock: one copy of the key per independent node; a restart of redis-0 empties its copy only.
			name: "a node's wipe leaves the other nodes' copies",
			b: linOnly().opOn("redis-0", "a", acq, key, "a", ttl, 0, ms(10), true).
				opOn("redis-1", "a", acq, key, "a", ttl, 0, ms(10), true).
				add(history.Event{Kind: history.KindFault, At: ms(100), End: ms(120),
					Fault: &history.Fault{ID: "f1", Name: "redis-restart", Wipes: true, WipedNode: "redis-0"}}).
				opOn("redis-0", "b", acq, key, "b", ttl, ms(200), ms(210), true).
				opOn("redis-1", "b", acq, key, "b", ttl, ms(200), ms(210), false),
			outcome: Pass,
		},
		{
			name: "a node's wipe does not empty another node's copy",
			b: linOnly().opOn("redis-1", "a", acq, key, "a", ttl, 0, ms(10), true).
				add(history.Event{Kind: history.KindFault, At: ms(100), End: ms(120),
					Fault: &history.Fault{ID: "f1", Name: "redis-restart", Wipes: true, WipedNode: "redis-0"}}).
				opOn("redis-1", "b", acq, key, "b", ttl, ms(200), ms(210), true),
			outcome: Violated,
			at:      ms(200),
		},
		{
			name: "a refusal past Redis's clock tick after the expiry",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", acq, key, "b", ttl, ttl+ms(12), ttl+ms(13), false, ""),
			outcome: Violated,
			at:      ttl + ms(12),
		},
		{
			name: "an idempotent release succeeds on an expired key",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				absentOKRelease("a", ms(1500), ms(1510), true),
			outcome: Pass,
		},
		{
			name: "a plain release cannot succeed on an expired key",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("a", rel, key, "a", 0, ms(1500), ms(1510), true, ""),
			outcome: Violated,
			at:      ms(1500),
		},
		{
			name: "an idempotent release of another's key is not a success",
			b: linOnly().op("b", acq, key, "b", ttl, 0, ms(10), true, "").
				absentOKRelease("a", ms(500), ms(510), true),
			outcome: Violated,
			at:      ms(500),
		},
		{
			name: "acquire is idempotent for the holder",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("a", acq, key, "a", ttl, ms(100), ms(110), true, ""),
			outcome: Pass,
		},
		{
			name: "two owners acquire within the TTL",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", acq, key, "b", ttl, ms(500), ms(510), true, ""),
			outcome: Violated,
			at:      ms(500),
		},
		{
			name: "second owner after expiry",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", acq, key, "b", ttl, ms(1100), ms(1110), true, ""),
			outcome: Pass,
		},
		{
			name: "expiry within the acquire's interval accepted",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(100), true, "").
				op("b", acq, key, "b", ttl, ms(1050), ms(1060), true, ""),
			outcome: Pass,
		},
		{
			name: "expiry within the read's interval accepted",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", read, key, "", 0, ms(995), ms(1020), true, ""),
			outcome: Pass,
		},
		{
			name: "read of an absent key before it could expire",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", read, key, "", 0, ms(500), ms(600), true, ""),
			outcome: Violated,
			at:      ms(500),
		},
		{
			name: "expiry cannot precede the earliest apply time",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(100), true, "").
				op("b", acq, key, "b", ttl, ms(950), ms(960), true, ""),
			outcome: Violated,
			at:      ms(950),
		},
		{
			name: "renew after expiry refused",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("a", ren, key, "a", ttl, ms(1500), ms(1510), true, ""),
			outcome: Violated,
			at:      ms(1500),
		},
		{
			name: "unknown acquire may not have applied",
			b: linOnly().unknownOp("a", acq, key, "a", ttl, 0).
				op("b", acq, key, "b", ttl, ms(500), ms(510), true, "").
				op("c", read, key, "", 0, ms(600), ms(610), true, "b"),
			outcome: Pass,
		},
		{
			name: "unknown acquire may have applied late",
			b: linOnly().unknownOp("a", acq, key, "a", ttl, 0).
				op("c", read, key, "", 0, ms(100), ms(110), true, "").
				op("c", read, key, "", 0, ms(5000), ms(5010), true, "a"),
			outcome: Pass,
		},
		{
			name: "unknown acquire that applied still holds its TTL",
			b: linOnly().unknownOp("a", acq, key, "a", ttl, 0).
				op("c", read, key, "", 0, ms(100), ms(110), true, "a").
				op("b", acq, key, "b", ttl, ms(500), ms(510), true, ""),
			outcome: Violated,
			at:      ms(500),
		},
		{
			name: "backend wipe empties the key",
			b: linOnly().op("a", acq, key, "a", 10*ttl, 0, ms(10), true, "").
				fault("f1", "redis-restart", time.Second, 2*time.Second, false, true).
				op("b", acq, key, "b", ttl, ms(2500), ms(2510), true, ""),
			outcome: Pass,
		},
		{
			name: "wipe may happen anywhere in its window",
			b: linOnly().op("a", acq, key, "a", 10*ttl, 0, ms(10), true, "").
				fault("f1", "redis-restart", time.Second, 2*time.Second, false, true).
				op("b", acq, key, "b", ttl, ms(1500), ms(1510), true, "").
				op("c", read, key, "", 0, ms(1600), ms(1610), true, "b"),
			outcome: Pass,
		},
		{
			// A restart from a snapshot brings back what the snapshot held, with its expiry: a's value
			// (granted for 10 s at 0) is back after the restart, and its renewal afterwards is granted.
			name: "a restore brings back what the snapshot held",
			b: linOnly().op("a", acq, key, "a", 10*ttl, 0, ms(10), true, "").
				fault("f1", "redis-restart-from-snapshot", time.Second, 2*time.Second, false, true).
				op("a", ren, key, "a", 10*ttl, ms(2500), ms(2510), true, ""),
			outcome: Pass,
		},
		{
			// What was written after the snapshot is lost: b's grant, made once a's value was released,
			// is gone, and a's restored value refuses b's renewal.
			name: "a restore loses what came after the snapshot",
			b: linOnly().op("a", acq, key, "a", 10*ttl, 0, ms(10), true, "").
				op("a", rel, key, "a", 0, ms(500), ms(510), true, "").
				fault("f1", "redis-restart-from-snapshot", ms(400), 2*time.Second, false, true).
				op("b", acq, key, "b", 10*ttl, ms(600), ms(610), true, "").
				op("b", ren, key, "b", 10*ttl, ms(2500), ms(2510), false, "").
				op("a", ren, key, "a", 10*ttl, ms(2600), ms(2610), true, ""),
			outcome: Pass,
		},
		{
			// A restored value is a value like any: nobody else is granted the key while it lives.
			name: "no second owner while a restored value lives",
			b: linOnly().op("a", acq, key, "a", 10*ttl, 0, ms(10), true, "").
				fault("f1", "redis-restart-from-snapshot", time.Second, 2*time.Second, false, true).
				op("a", ren, key, "a", 10*ttl, ms(2500), ms(2510), true, "").
				op("b", acq, key, "b", ttl, ms(3000), ms(3010), true, ""),
			outcome: Violated,
			at:      ms(3000),
		},
		{
			name: "no wipe, no second owner",
			b: linOnly().op("a", acq, key, "a", 10*ttl, 0, ms(10), true, "").
				fault("f1", "partition", time.Second, 2*time.Second, false, false, "a").
				op("b", acq, key, "b", ttl, ms(2500), ms(2510), true, ""),
			outcome: Violated,
			at:      ms(2500),
		},
		{
			name: "refused connection dropped",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				add(history.Event{Kind: history.KindOp, At: ms(100), End: ms(101), Instance: "b", Endpoint: "e1",
					Op: &history.Op{Kind: acq, Key: key, Owner: "b", TTL: ttl, OK: true, Err: "dial tcp 127.0.0.1:1: connect: connection refused"}}),
			outcome: Pass,
		},
		{
			name: "unflagged timeout treated as unknown",
			b: linOnly().add(history.Event{Kind: history.KindOp, At: 0, End: ms(100), Instance: "a", Endpoint: "e1",
				Op: &history.Op{Kind: acq, Key: key, Owner: "a", TTL: ttl, Err: "read tcp: i/o timeout"}}).
				op("c", read, key, "", 0, ms(500), ms(510), true, "a"),
			outcome: Pass,
		},
		{
			name: "other keys are independent",
			b: linOnly().op("a", acq, key, "a", ttl, 0, ms(10), true, "").
				op("b", acq, "poll:lease:e2", "b", ttl, ms(500), ms(510), true, "").
				op("x", history.OpOther, key, "x", 0, ms(600), ms(610), true, ""),
			outcome: Pass,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resultOf(t, Check(tc.b.build(), DefaultOptions()), InvLinearizable)
			require.Equal(t, tc.outcome, r.Outcome, r.Message)
			if tc.outcome == Violated {
				require.Len(t, r.Violations, 1)
				v := r.Violations[0]
				require.Equal(t, tc.at, v.At, v.Message)
				require.Equal(t, "e1", v.Endpoint)
				require.NotEmpty(t, v.Events)
				require.Contains(t, v.Message, "cannot follow")
			}
		})
	}
}

// pathological returns a key history porcupine cannot settle quickly: n concurrent renewals with distinct
// TTLs, each leaving a different state, then a read no state can produce.
func pathological(n int) *builder {
	b := linOnly().op("a", history.OpAcquire, key, "a", time.Hour, 0, ms(1), true, "")
	for i := range n {
		b.op("a", history.OpRenew, key, "a", time.Hour+time.Duration(i)*time.Second, ms(10), ms(20), true, "")
	}
	return b.op("b", history.OpRead, key, "", 0, ms(30), ms(31), true, "nobody")
}

func TestLinearizabilityTimeoutIsUnknown(t *testing.T) {
	h := pathological(24).build()
	start := time.Now()
	rep := Check(h, Options{LinearizabilityTimeout: 50 * time.Millisecond})
	r := resultOf(t, rep, InvLinearizable)
	require.Equal(t, Unknown, r.Outcome, r.Message)
	require.Contains(t, r.Message, "checker timed out after 50ms")
	require.Contains(t, r.Message, "neither proven nor refuted")
	require.False(t, rep.OK())
	require.Less(t, time.Since(start), 20*time.Second, "the timeout must cut the search short")
}

func TestLinearizabilityPathologicalSmallIsRefuted(t *testing.T) {
	r := resultOf(t, Check(pathological(4).build(), DefaultOptions()), InvLinearizable)
	require.Equal(t, Violated, r.Outcome, r.Message)
}
