package checker

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tenurelabs/tenure/history"
)

// checkFencing judges that fencing tokens never go backwards, per endpoint, by two rules:
//
//   - polls: among polls that reached the resource and carried a token (non-zero), in arrival order, no
//     token is lower than an earlier one. Equal tokens are fine (one holding polls many times). Refused
//     polls are excluded: refusing them is fencing working. Successive stale polls of one instance with
//     one token are reported once.
//   - beliefs: among "held" beliefs carrying a token, in the order reported, each acquisition's token is
//     higher than every earlier acquisition's token, except that an instance may report the holding it
//     already has again with the same token;
//   - wipes: every acquisition after a fault that erased the backend (Wipes) carries a token above every
//     token granted before the fault (by acquisitions, or seen on polls). The exception above does not
//     cross a wipe: the wiped backend forgot the holding, so re-acquiring it is a new grant, and a token
//     that restarted from the bottom would let a stale holder of the old token through.
//
// Histories without tokens are Skipped.
func checkFencing(idx *model, opts Options) Result {
	var c collector
	pollsJudged, beliefsJudged := 0, 0
	for _, ep := range idx.pollEndpoints() {
		var top, last *history.Event // highest token so far; last poll reported
		for _, p := range idx.polls[ep] {
			if !reached(p) || p.Poll.Token == 0 {
				continue
			}
			pollsJudged++
			if top != nil && p.Poll.Token < top.Poll.Token {
				if last != nil && last.Instance == p.Instance && last.Poll.Token == p.Poll.Token {
					continue // the same stale holding polling again: reported once
				}
				last = p
				c.add(Violation{At: p.At, Endpoint: ep, Instances: []string{top.Instance, p.Instance},
					Events: []int64{top.Seq, p.Seq}, ReachedResource: true,
					Message: fmt.Sprintf("%s reached %s at %v with token %d after %s had reached it at %v with token %d",
						p.Instance, ep, p.At, p.Poll.Token, top.Instance, top.At, top.Poll.Token)})
				continue
			}
			top = p
		}
	}
	for ep, bs := range idx.beliefs {
		var top *history.Event
		for _, b := range bs {
			if !b.Belief.Held || b.Belief.Token == 0 {
				continue
			}
			beliefsJudged++
			if top != nil && (b.Belief.Token < top.Belief.Token ||
				(b.Belief.Token == top.Belief.Token && b.Instance != top.Instance)) {
				c.add(Violation{At: b.At, Endpoint: ep, Instances: []string{top.Instance, b.Instance},
					Events: []int64{top.Seq, b.Seq},
					Message: fmt.Sprintf("%s acquired %s at %v with token %d, not above the token %d %s acquired at %v",
						b.Instance, ep, b.At, b.Belief.Token, top.Belief.Token, top.Instance, top.At)})
				continue
			}
			top = b
		}
	}
	wipesJudged := checkWipeTokens(idx, &c)
	if pollsJudged == 0 && beliefsJudged == 0 {
		return Result{Invariant: InvFencing, Outcome: Skipped,
			Message: "no fencing tokens were recorded: nothing to judge"}
	}
	return c.result(InvFencing, opts.MaxViolations,
		fmt.Sprintf("tokens never went backwards over %d polls and %d acquisitions%s", pollsJudged, beliefsJudged, wipesJudged),
		fmt.Sprintf("fencing tokens went backwards %d times: a stale holder's token was accepted or an acquisition reused an old token", len(c.list)))
}

// checkWipeTokens adds a violation for every acquisition after a wiping fault whose token is not above
// every token granted before the fault, and describes what it judged for the pass message.
func checkWipeTokens(idx *model, c *collector) string {
	var wipes []*history.Event
	for _, f := range idx.faults {
		if f.Fault.Wipes {
			wipes = append(wipes, f)
		}
	}
	if len(wipes) == 0 {
		return ""
	}
	judged := 0
	for _, w := range wipes {
		for _, ep := range slices.Sorted(maps.Keys(idx.beliefs)) {
			var top *history.Event // the highest token granted before the wipe
			topTok := func(e *history.Event) uint64 {
				if e.Belief != nil {
					return e.Belief.Token
				}
				return e.Poll.Token
			}
			for _, b := range idx.beliefs[ep] {
				if b.At < w.At && b.Belief.Held && b.Belief.Token > 0 && (top == nil || b.Belief.Token > topTok(top)) {
					top = b
				}
			}
			for _, p := range idx.polls[ep] {
				if p.At < w.At && p.Poll.Token > 0 && (top == nil || p.Poll.Token > topTok(top)) {
					top = p
				}
			}
			if top == nil {
				continue
			}
			for _, b := range idx.beliefs[ep] {
				if b.At <= w.At || !b.Belief.Held || b.Belief.Token == 0 || b.Belief.Reason == history.ReasonRenewed {
					continue
				}
				judged++
				if b.Belief.Token > topTok(top) {
					continue
				}
				c.add(Violation{At: b.At, Endpoint: ep, Instances: []string{top.Instance, b.Instance},
					Events: []int64{w.Seq, top.Seq, b.Seq},
					Message: fmt.Sprintf("%s acquired %s at %v with token %d after the backend was wiped (%s %s at %v), not above the token %d %s had before it (at %v): a stale holder of the old token cannot be told apart",
						b.Instance, ep, b.At, b.Belief.Token, w.Fault.ID, w.Fault.Name, w.At, topTok(top), top.Instance, top.At)})
			}
		}
	}
	return fmt.Sprintf(", and %d acquisitions after %d backend wipes rose above every earlier token", judged, len(wipes))
}
