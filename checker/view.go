package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// The bound table, as a view of the model: for each effect a fault can have on a holder, a canonical
// history (a holder a of e1 that renews and heartbeats every interval and polls at its cadence, a
// member b that could take over, the fault at one moment) is run through the same computation that
// judges every run, and the table reports the deadline it derives, counted from the fault. Nothing
// judges a run by this table; it shows what the model concludes, at the timing it is given.

// BoundRow is one line of the bound table.
type BoundRow struct {
	// Effect is the fault's effect on the holder (or on the backend); Situation the canonical case.
	Effect    Effect
	Situation string
	// After is the deadline, counted from the fault's start; Why derives it.
	After time.Duration
	Why   string
}

// BoundTable returns the deadlines the model derives for the canonical situations, at the timing of m
// (its lease TTL, poll interval, discovery interval and Timing).
func BoundTable(m history.Meta) []BoundRow {
	fig := figuresOf(m)
	if !fig.timed {
		return nil
	}
	var rows []BoundRow
	for _, c := range canonical(fig) {
		h := c.build(m)
		md := newModel(newIndex(h))
		row := BoundRow{Effect: c.effect, Situation: c.situation}
		for _, g := range md.owed() {
			if g.ep != "e1" || g.take == nil || g.take.holder != "a" || g.to < c.at {
				continue
			}
			row.After = g.take.deadline - c.at
			row.Why = strings.Join(g.take.why, "; ")
			break
		}
		rows = append(rows, row)
	}
	return rows
}

// canonicalCase is one situation of the table.
type canonicalCase struct {
	effect    Effect
	situation string
	at        time.Duration // the fault's start
	build     func(m history.Meta) history.History
}

// sketch writes a canonical history: a and b join at 0; a holds e1 and b holds e2, each acquired at the
// start (the run's guard skipped: the backend is established), renewed every renewal interval and polled
// every poll interval; both heartbeat every heartbeat interval. cut is when a stops (its fault), end when
// the history ends; more adds the fault.
type sketch struct {
	m      history.Meta
	fig    figures
	events []history.Event
}

func (s *sketch) add(e history.Event) {
	e.Seq = int64(len(s.events) + 1)
	s.events = append(s.events, e)
}

func (s *sketch) op(inst string, kind history.OpKind, ep, owner, cmd string, at time.Duration, ok bool) {
	key := "poll:lease:" + ep
	if ep == "" {
		key = "poll:node:" + inst
	}
	s.add(history.Event{Kind: history.KindOp, At: at, End: at + time.Millisecond, Instance: inst, Endpoint: ep,
		Op: &history.Op{Kind: kind, Key: key, Owner: owner, TTL: s.fig.ttl, OK: ok, Command: cmd}})
}

// holding adds inst's holding of ep from from: acquire, renewals and heartbeats answered until writes,
// polls until polls.
func (s *sketch) holding(inst, ep string, from, writes, polls time.Duration) {
	v := inst + ":1"
	s.op(inst, history.OpAcquire, ep, v, "evalsha acquire", from, true)
	for t := from + s.fig.renew; t < writes; t += s.fig.renew {
		s.op(inst, history.OpRenew, ep, v, "evalsha renew", t, true)
	}
	for t := from; t < writes; t += s.fig.heartbeat {
		s.op(inst, history.OpOther, "", "", "set poll:node:"+inst+" 1 px", t+time.Millisecond, true)
	}
	for t := from + 2*time.Millisecond; t < polls; t += s.fig.pollInterval {
		s.add(history.Event{Kind: history.KindPoll, At: t, End: t + s.fig.pollDuration, Instance: inst, Endpoint: ep,
			Poll: &history.Poll{Token: 1, Outcome: history.PollOK}})
	}
}

func (s *sketch) fault(name string, at, end time.Duration, removes, wipes bool, params map[string]string, targets ...string) {
	s.add(history.Event{Kind: history.KindFault, At: at, End: end,
		Fault: &history.Fault{ID: "f1", Name: name, Targets: targets, Removes: removes, Wipes: wipes, Params: params}})
}

func (s *sketch) life(inst string, c history.LifecycleChange, at time.Duration) {
	s.add(history.Event{Kind: history.KindLifecycle, At: at, Instance: inst, Lifecycle: &history.Lifecycle{Change: c}})
}

func (s *sketch) lost(inst string, kind history.OpKind, ep, owner string, at time.Duration) {
	key := "poll:lease:" + ep
	if ep == "" {
		key = "poll:node:" + inst
	}
	s.add(history.Event{Kind: history.KindOp, At: at, End: history.Infinity, Instance: inst, Endpoint: ep,
		Op: &history.Op{Kind: kind, Key: key, Owner: owner, TTL: s.fig.ttl, Unknown: true, Err: "i/o timeout",
			GaveUp: at + s.fig.opTimeout, Command: "evalsha renew"}})
}

func canonical(fig figures) []canonicalCase {
	// The fault comes at 4 TTLs, just after a renewal and a heartbeat of a's (both at whole intervals
	// from 0): the holder wrote until the fault, the worst case for what it leaves in the key.
	at := 4*fig.ttl + 2*time.Millisecond
	end := at + 20*fig.ttl
	// more adds the fault and returns until when a's writes were answered and until when it polled.
	mk := func(effect Effect, situation string, more func(s *sketch) (time.Duration, time.Duration)) canonicalCase {
		return canonicalCase{effect: effect, situation: situation, at: at, build: func(m history.Meta) history.History {
			s := &sketch{m: m, fig: figuresOf(m)}
			s.life("a", history.LifeStarted, 0)
			s.life("b", history.LifeStarted, 0)
			writes, polls := more(s)
			s.holding("a", "e1", 0, writes, polls)
			s.holding("b", "e2", 0, end, end)
			m.Duration = end
			evs := s.events
			history.Sort(evs)
			return history.History{Meta: m, Events: evs}
		}}
	}
	// The holder's next renewal after the fault, and when it gives up on it.
	next := 4*fig.ttl + fig.renew
	gave := next + fig.opTimeout
	return []canonicalCase{
		mk(EffectGone, "the holder crashes", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("crash", at, at, true, false, nil, "a")
			s.life("a", history.LifeCrashed, at)
			return at, at
		}),
		mk(EffectStopped, "the holder stops gracefully and releases", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("stop", at, at, true, false, nil, "a")
			s.op("a", history.OpRelease, "e1", "a:1", "evalsha release", at+fig.pollDuration, true)
			s.life("a", history.LifeStopped, at+fig.pollDuration)
			return at, at
		}),
		mk(EffectCutOff, "the holder is cut off (both ways) for longer than a TTL", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("partition", at, at+2*fig.ttl, false, false, nil, "a")
			s.lost("a", history.OpRenew, "e1", "a:1", next)
			return at, gave
		}),
		mk(EffectBlind, "the holder's replies are lost for longer than a TTL: its next renewal lands unseen", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("one-way-partition", at, at+2*fig.ttl, false, false, nil, "a")
			s.lost("a", history.OpRenew, "e1", "a:1", next)
			return at, gave
		}),
		mk(EffectSlowed, "the holder's requests are held for 1.5 TTL: its next renewal lands after it gave up", func(s *sketch) (time.Duration, time.Duration) {
			d := fig.ttl * 3 / 2
			s.fault("slow-requests", at, at+fig.ttl, false, false, map[string]string{"delay": d.String()}, "a")
			s.lost("a", history.OpRenew, "e1", "a:1", next)
			return at, gave
		}),
		mk(EffectPaused, "the holder freezes for 1.5 TTL", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("pause", at, at+fig.ttl*3/2, false, false, nil, "a")
			s.life("a", history.LifePaused, at)
			s.life("a", history.LifeResumed, at+fig.ttl*3/2)
			return at, at
		}),
		mk(EffectDataLoss, "Redis restarts empty, down for a tenth of a TTL", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("redis-restart", at, at+fig.ttl/10, false, true, nil)
			s.op("a", history.OpRenew, "e1", "a:1", "evalsha renew", next, false)
			return at, next
		}),
		mk(EffectDataLoss, "a replica is promoted a tenth of a TTL after the primary is killed", func(s *sketch) (time.Duration, time.Duration) {
			s.fault("primary-kill", at, at, false, false, nil)
			s.add(history.Event{Kind: history.KindNote, At: at + fig.ttl/10, Note: history.NotePromotion + "redis-0 -> redis-1"})
			s.op("a", history.OpRenew, "e1", "a:1", "evalsha renew", next, false)
			return at, next
		}),
	}
}

// BoundTableMarkdown renders rows as docs/bounds.md shows them.
func BoundTableMarkdown(rows []BoundRow) string {
	var b strings.Builder
	b.WriteString("| effect | situation | deadline after the fault |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %v |\n", r.Effect, r.Situation, r.After.Round(time.Millisecond))
	}
	return b.String()
}
