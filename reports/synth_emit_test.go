package reports

import (
	"fmt"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// emitEndpoint writes endpoint e's operations, beliefs and polls; for the victim it adds the stale poll
// and returns the violation it causes.
func (g *synthGen) emitEndpoint(e int) (checker.Violation, bool) {
	ep := fmt.Sprintf("ep-%03d", e+1)
	key := "poll:lease:" + ep
	ttl, poll := g.cfg.ttl, g.cfg.poll
	pd := poll / 8
	var viol checker.Violation
	found := false
	var overlapSeq int64
	for _, s := range g.segs[e] {
		id := g.ids[s.inst]
		g.add(history.Event{Kind: history.KindOp, At: s.from - 2*time.Millisecond, End: s.from - time.Millisecond, Instance: id, Endpoint: ep,
			Op: &history.Op{Kind: history.OpAcquire, Key: key, Owner: id, TTL: ttl, OK: true, Command: "evalsha acquire " + key}})
		g.add(history.Event{Kind: history.KindBelief, At: s.from, Instance: id, Endpoint: ep, Belief: &history.Belief{Held: true, Token: s.token, Reason: "acquired"}})
		for t := s.from + ttl/3; t < s.to && t < g.cfg.dur; t += ttl / 3 {
			op := &history.Op{Kind: history.OpRenew, Key: key, Owner: id, TTL: ttl, OK: true, Command: "evalsha renew " + key}
			end := t + 500*time.Microsecond + g.jit(time.Millisecond)
			if s.partitionUntil > 0 && t >= g.tp && t < s.partitionUntil {
				op.OK, op.Unknown, op.Err, end = false, true, "i/o timeout", history.Infinity
			}
			if s.inst == g.paused && t >= g.tg && t < g.tr {
				continue
			}
			g.add(history.Event{Kind: history.KindOp, At: t, End: end, Instance: id, Endpoint: ep, Op: op})
		}
		for t := s.pollFrom; t <= s.pollTo && t < g.cfg.dur; t += poll + g.jit(poll/20) - poll/40 {
			seq := g.add(history.Event{Kind: history.KindPoll, At: t, End: t + pd + g.jit(pd/4), Instance: id, Endpoint: ep,
				Poll: &history.Poll{Token: s.token, Outcome: history.PollOK, MaxToken: s.token}})
			if e == g.victim && s.inst != g.paused && t <= g.tr && g.tr < t+pd {
				overlapSeq = seq
			}
		}
		if s.endReason != "" {
			if s.releaseOp {
				g.add(history.Event{Kind: history.KindOp, At: s.to - time.Millisecond, End: s.to, Instance: id, Endpoint: ep,
					Op: &history.Op{Kind: history.OpRelease, Key: key, Owner: id, OK: true, Command: "evalsha release " + key}})
			}
			g.add(history.Event{Kind: history.KindBelief, At: s.to, Instance: id, Endpoint: ep, Belief: &history.Belief{Held: false, Token: s.token, Reason: s.endReason}})
		}
		if e == g.victim && s.inst == g.paused && s.endReason == "lost" {
			stale := g.add(history.Event{Kind: history.KindPoll, At: g.tr, End: g.tr + pd, Instance: id, Endpoint: ep,
				Poll: &history.Poll{Token: s.token, Outcome: history.PollOK, MaxToken: s.token + 1}})
			viol = checker.Violation{At: g.tr, Endpoint: ep, Message: fmt.Sprintf("%s polled with token %d while %s held token %d: the polls overlap",
				id, s.token, "the new holder", s.token+1), Events: []int64{stale}, ReachedResource: true}
			viol.Instances = []string{g.ids[g.segs[e][len(g.segs[e])-1].inst], id}
			found = true
		}
	}
	if found && overlapSeq > 0 {
		viol.Events = append([]int64{overlapSeq}, viol.Events...)
	}
	return viol, found
}

// emitHeartbeats writes every live instance's heartbeat writes (operations on no endpoint).
func (g *synthGen) emitHeartbeats() {
	ttl := g.cfg.ttl
	for i, id := range g.ids {
		for t := 40*time.Millisecond + g.jit(ttl/3); t < g.cfg.dur; t += ttl / 3 {
			if i == g.crash && t >= g.tc || i == g.paused && t >= g.tg && t < g.tr {
				continue
			}
			op := &history.Op{Kind: history.OpOther, Key: "poll:node:" + id, TTL: ttl, OK: true, Command: "set poll:node:" + id + " 1 px"}
			end := t + time.Millisecond
			if i == g.part && t >= g.tp && t < g.tq {
				op.OK, op.Unknown, op.Err, end = false, true, "i/o timeout", history.Infinity
			}
			g.add(history.Event{Kind: history.KindOp, At: t, End: end, Instance: id, Op: op})
		}
	}
}

// balance samples the holdings every 500ms.
func (g *synthGen) balance() []checker.BalanceSample {
	var out []checker.BalanceSample
	for t := time.Duration(0); t < g.cfg.dur; t += 500 * time.Millisecond {
		s := checker.BalanceSample{At: t, PerInst: map[string]int{}}
		live := 0
		for i, id := range g.ids {
			if i == g.crash && t >= g.tc {
				continue
			}
			live++
			s.PerInst[id] = 0
		}
		for e := range g.segs {
			if h := g.holderAt(e, t); h >= 0 {
				s.PerInst[g.ids[h]]++
			}
		}
		s.Ideal = float64(g.cfg.endpoints) / float64(live)
		out = append(out, s)
	}
	return out
}
