package checker

import (
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

// newBuilder returns a lease history of 20 s with TTL 3 s, poll interval 1 s and failover bound 5 s. It
// starts with one harness read of an unused key, so that backend operations are present.
func newBuilder() *builder {
	b := &builder{meta: history.Meta{
		Schema: history.SchemaVersion, Scenario: "synthetic", System: "test", Kind: "lease",
		Instances: 2, Endpoints: 0, LeaseTTL: 3 * time.Second, FailoverBound: 5 * time.Second,
		PollInterval: time.Second, Duration: 20 * time.Second,
	}}
	return b.op("", history.OpRead, "probe", "", 0, 0, ms(1), true, "")
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
