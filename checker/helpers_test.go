package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// builder assembles a synthetic history. Seqs follow the order of the calls, as a recorder's would; the
// events are sorted by time when built.
type builder struct {
	meta   history.Meta
	events []history.Event
}

// newBuilder returns a lease history of 20 s with the specification's timing at a tenth: TTL 3 s,
// renewals and heartbeats every 1 s, calls bounded by 300 ms, polls of 100 ms every 1 s (the poll
// interval is a tenth of the builder's usual 5 s spec: 1 s keeps the histories short). It starts with
// one harness read of an unused key, so that backend operations are present.
func newBuilder() *builder {
	b := &builder{meta: history.Meta{
		Schema: history.SchemaVersion, Scenario: "synthetic", System: "test", Kind: "lease",
		Instances: 2, Endpoints: 0, LeaseTTL: 3 * time.Second, FailoverBound: SpecFailoverBound(3 * time.Second),
		PollInterval: time.Second, Duration: 20 * time.Second,
		Timing: &history.Timing{RenewInterval: time.Second, HeartbeatInterval: time.Second, HeartbeatTTL: 3 * time.Second,
			OpTimeout: ms(300), PollDuration: ms(100)},
	}}
	return b.op("", history.OpRead, "probe", "", 0, 0, ms(1), true, "")
}

// untimed drops the timing from the header, as in a history recorded before it was.
func (b *builder) untimed() *builder {
	return b.with(func(m *history.Meta) { m.Timing = nil })
}

func (b *builder) add(e history.Event) *builder {
	e.Seq = int64(len(b.events) + 1)
	b.events = append(b.events, e)
	return b
}

func (b *builder) poll(inst, ep string, at, end time.Duration, token uint64) *builder {
	return b.add(history.Event{Kind: history.KindPoll, At: at, End: end, Instance: inst, Endpoint: ep,
		Poll: &history.Poll{Token: token, Outcome: history.PollOK}})
}

func (b *builder) refused(inst, ep string, at time.Duration, token, maxToken uint64) *builder {
	return b.add(history.Event{Kind: history.KindPoll, At: at, End: at + ms(1), Instance: inst, Endpoint: ep,
		Poll: &history.Poll{Token: token, Outcome: history.PollRefused, MaxToken: maxToken}})
}

// polls adds polls of ep by inst every step in [from, to), each lasting 100 ms.
func (b *builder) polls(inst, ep string, from, to, step time.Duration, token uint64) *builder {
	for t := from; t < to; t += step {
		b.poll(inst, ep, t, t+ms(100), token)
	}
	return b
}

func (b *builder) op(inst string, kind history.OpKind, key, owner string, ttl, at, end time.Duration, ok bool, value string) *builder {
	return b.add(history.Event{Kind: history.KindOp, At: at, End: end, Instance: inst,
		Endpoint: strings.TrimPrefix(key, "poll:lease:"),
		Op:       &history.Op{Kind: kind, Key: key, Owner: owner, TTL: ttl, OK: ok, Value: value}})
}

// opOn is op on one node of a set of independent nodes (history.Op.Node).
func (b *builder) opOn(node, inst string, kind history.OpKind, key, owner string, ttl, at, end time.Duration, ok bool) *builder {
	b.op(inst, kind, key, owner, ttl, at, end, ok, "")
	b.events[len(b.events)-1].Op.Node = node
	return b
}

func (b *builder) unknownOp(inst string, kind history.OpKind, key, owner string, ttl, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindOp, At: at, End: history.Infinity, Instance: inst,
		Endpoint: strings.TrimPrefix(key, "poll:lease:"),
		Op:       &history.Op{Kind: kind, Key: key, Owner: owner, TTL: ttl, Unknown: true, Err: "i/o timeout"}})
}

func (b *builder) fault(id, name string, at, end time.Duration, removes, wipes bool, targets ...string) *builder {
	return b.add(history.Event{Kind: history.KindFault, At: at, End: end,
		Fault: &history.Fault{ID: id, Name: name, Targets: targets, Removes: removes, Wipes: wipes}})
}

// paused adds a pause of inst over [at, end] that took hold at once: the fault and the lifecycle events
// the harness records when it freezes and wakes the instance.
func (b *builder) paused(id, inst string, at, end time.Duration) *builder {
	return b.fault(id, "pause", at, end, false, false, inst).life(inst, history.LifePaused, at).life(inst, history.LifeResumed, end)
}

func (b *builder) life(inst string, change history.LifecycleChange, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindLifecycle, At: at, Instance: inst,
		Lifecycle: &history.Lifecycle{Change: change}})
}

func (b *builder) belief(inst, ep string, at time.Duration, held bool, token uint64) *builder {
	return b.add(history.Event{Kind: history.KindBelief, At: at, Instance: inst, Endpoint: ep,
		Belief: &history.Belief{Held: held, Token: token}})
}

func (b *builder) session(ep string, change history.SessionChange, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindSession, At: at, Endpoint: ep,
		Session: &history.Session{Change: change}})
}

func (b *builder) with(f func(m *history.Meta)) *builder {
	f(&b.meta)
	return b
}

func (b *builder) build() history.History {
	evs := append([]history.Event(nil), b.events...)
	history.Sort(evs)
	return history.History{Meta: b.meta, Events: evs}
}

// resultOf returns the result of invariant inv in rep.
func resultOf(t testing.TB, rep Report, inv string) Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.Invariant == inv {
			return r
		}
	}
	require.Failf(t, "missing result", "no result for %s in %+v", inv, rep.Results)
	return Result{}
}

// reachedViolations returns the violations that are not fencing refusals.
func reachedViolations(r Result) []Violation { return r.Breaches() }

// healthy returns a builder for a settled fleet: instances a and b hold two endpoints each for 20 s,
// polling every second with tokens, one steady window [4 s, 18 s], balance expected.
func healthy() *builder {
	b := newBuilder().with(func(m *history.Meta) {
		m.Endpoints = 4
		m.ExpectBalance = true
		m.Fencing = true
		m.Steady = []history.Window{{From: 4 * time.Second, To: 18 * time.Second}}
	})
	b.life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0)
	for i, ep := range []string{"e1", "e2", "e3", "e4"} {
		inst := "a"
		if i >= 2 {
			inst = "b"
		}
		key := "poll:lease:" + ep
		b.op(inst, history.OpAcquire, key, inst, 3*time.Second, ms(10), ms(12), true, "")
		b.belief(inst, ep, ms(12), true, 1)
		for t := time.Second; t < 20*time.Second; t += time.Second {
			b.op(inst, history.OpRenew, key, inst, 3*time.Second, t-ms(50), t-ms(48), true, "")
		}
		b.polls(inst, ep, ms(20), 20*time.Second, time.Second, 1)
	}
	return b
}

// allText is a result's message and its violations' messages, one per line.
func allText(r Result) string {
	s := r.Message
	for _, v := range r.Violations {
		s += "\n" + v.Message
	}
	return s
}

// held adds a held belief with a reason and a deadline (0 for none).
func (b *builder) held(inst, ep string, at time.Duration, token uint64, reason string, deadline time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindBelief, At: at, Instance: inst, Endpoint: ep,
		Belief: &history.Belief{Held: true, Token: token, Reason: reason, Deadline: deadline}})
}

// faultP adds a fault with parameters.
func (b *builder) faultP(id, name string, at, end time.Duration, params map[string]string, targets ...string) *builder {
	return b.add(history.Event{Kind: history.KindFault, At: at, End: end,
		Fault: &history.Fault{ID: id, Name: name, Targets: targets, Params: params}})
}

// assume records assumptions in the header.
func (b *builder) assume(drift float64, outside ...string) *builder {
	return b.with(func(m *history.Meta) {
		m.Assumptions = history.Assumptions{DriftBound: drift, Persistence: "none", Topology: "single", Outside: outside}
	})
}

// caughtText is a result's caught findings' messages, one per line.
func caughtText(r Result) string {
	s := ""
	for _, v := range r.Caught {
		s += "\n" + v.Message
	}
	return s
}

// crashBase is a fleet of a and b: a polls e1 until 5.5 s, b polls e2 throughout. Its endpoints have no
// modelled operations: the model reads their holdings off the holders' effects.
func crashBase() *builder {
	return newBuilder().life("a", history.LifeStarted, 0).life("b", history.LifeStarted, 0).
		polls("a", "e1", 0, 5*time.Second+ms(500), time.Second, 1).
		polls("b", "e2", 0, 20*time.Second, time.Second, 1)
}

// withParams sets the parameters of the fault added last.
func (b *builder) withParams(kv ...string) *builder {
	f := b.events[len(b.events)-1].Fault
	f.Params = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = kv[i+1]
	}
	return b
}

// note adds a free-form marker (a promotion, say).
func (b *builder) note(text string, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindNote, At: at, Note: text})
}

// withLag records the harness's lag samples in the header.
func (b *builder) withLag(samples ...history.LagSample) *builder {
	return b.with(func(m *history.Meta) {
		m.Lag = &history.Lag{Window: 100 * time.Millisecond, Floor: 10 * time.Millisecond, Windows: 200, Samples: samples}
	})
}

// hold adds what a holding of ep by inst from from to to looks like in a reference-like history: an
// acquire answered granted, its belief, a renewal every second answered (each moving the belief's
// deadline), and a poll every second. The value is inst:from. It returns the builder.
func (b *builder) hold(inst, ep string, from, to time.Duration) *builder {
	s := time.Second
	ttl := b.meta.LeaseTTL
	key := "poll:lease:" + ep
	value := fmt.Sprintf("%s:%d", inst, from.Milliseconds())
	deadline := func(t time.Duration) time.Duration { return t + time.Duration(float64(ttl)*0.99) }
	b.op(inst, history.OpAcquire, key, value, ttl, from, from+ms(2), true, "")
	b.held(inst, ep, from+ms(2), 1, history.ReasonAcquired, deadline(from))
	for t := from + s; t < to; t += s {
		b.op(inst, history.OpRenew, key, value, ttl, t, t+ms(2), true, "")
		b.held(inst, ep, t+ms(2), 1, history.ReasonRenewed, deadline(t))
	}
	return b.polls(inst, ep, from+ms(5), to, s, 1)
}

// beats adds inst's heartbeats (a plain SET with a TTL, answered) every second in [from, to).
func (b *builder) beats(inst string, from, to time.Duration) *builder {
	for t := from; t < to; t += time.Second {
		b.add(history.Event{Kind: history.KindOp, At: t, End: t + ms(1), Instance: inst,
			Op: &history.Op{Kind: history.OpOther, Key: "poll:node:" + inst, Command: "set poll:node:" + inst + " 1 px 3000", OK: true}})
	}
	return b
}

// lost adds an operation of inst on ep's key that got no reply: its caller gave up a call bound later.
func (b *builder) lost(inst string, kind history.OpKind, ep, value string, at time.Duration) *builder {
	b.add(history.Event{Kind: history.KindOp, At: at, End: history.Infinity, Instance: inst, Endpoint: ep,
		Op: &history.Op{Kind: kind, Key: "poll:lease:" + ep, Owner: value, TTL: b.meta.LeaseTTL, Unknown: true,
			Err: "i/o timeout", GaveUp: at + ms(300)}})
	return b
}

// lostBeat adds a heartbeat of inst that got no reply.
func (b *builder) lostBeat(inst string, at time.Duration) *builder {
	return b.add(history.Event{Kind: history.KindOp, At: at, End: history.Infinity, Instance: inst,
		Op: &history.Op{Kind: history.OpOther, Key: "poll:node:" + inst, Command: "set poll:node:" + inst + " 1 px 3000",
			Unknown: true, Err: "i/o timeout", GaveUp: at + ms(300)}})
}

// release adds a release of ep by inst of value, answered (deleted) at at+2ms.
func (b *builder) release(inst, ep, value string, at time.Duration) *builder {
	return b.op(inst, history.OpRelease, "poll:lease:"+ep, value, 0, at, at+ms(2), true, "")
}
