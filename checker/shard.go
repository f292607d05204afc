package checker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// ShardSlotsParam is the fault parameter that makes a fault a shard fault: the hash slots it touched,
// as comma-separated ranges ("0-5460,10923-16383"; a single slot is "15222"). A Redis Cluster fault
// that kills a shard's primary records every slot that primary served; a slot migration records the
// moved slot.
const ShardSlotsParam = "slots"

// Shard faults are judged by checkShardGaps: a fault that touches some of a Redis Cluster's hash slots
// gives no reason for an endpoint whose keys live elsewhere to stop being polled. Its holder is live
// and the primary serving its keys answers, so nothing in the specification's failure model lets its
// lease lapse: it keeps its cadence. Across the fault (from the last poll before it to the first gap
// that begins more than the specification's bound after its end), each gap between two polls of such
// an endpoint by one instance, counted from the end of the first poll to the start of the next, is held
// to its cadence bound (cadenceBound): the poll interval + FailoverTolerance, or, for an endpoint that
// kept a slower pace before the fault (paceBefore: the second longest gap, so that one handoff or one
// slow poll is not a pace), that pace and a quarter; never more than the specification's bound. A gap
// already over its bound when the fault began counts like any other. A change of holder (a handoff, by
// rebalancing) is held to the specification's failover bound, lease TTL + FailoverTolerance, between
// poll starts; so is a gap still open at the end of the run.
//
// With the bound table (histories with Meta.Timing), another fault that hindered a spared endpoint (see
// extended: one that hit its holder, or the whole backend) may excuse its gap until that fault's own
// deadline; a fault that hindered nothing (a drift, a fault on another instance) excuses nothing.
// Endpoints on touched slots are judged by liveness against the table's deadline for the fault, scoped
// to its slots (a promotion re-arms the guard: promotion, notice and a TTL), whether or not the fault is
// declared outside the assumptions. Older histories hold the touched endpoints to the scenario's own
// bound (Meta.FailoverBound) unless the fault is declared outside the assumptions, and do not judge a
// shard fault that another fault overlaps.
//
// An endpoint's slots are those of the keys its operations named (Op.Key, hash tags honoured); one
// without operations in the history is not placed, and not judged.

// slotRange is an inclusive range of hash slots.
type slotRange struct{ lo, hi int }

// parseSlots reads ShardSlotsParam.
func parseSlots(s string) ([]slotRange, error) {
	var out []slotRange
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		a, b, ok := strings.Cut(part, "-")
		lo, err := strconv.Atoi(a)
		if err != nil {
			return nil, fmt.Errorf("slot range %q: %w", part, err)
		}
		hi := lo
		if ok {
			if hi, err = strconv.Atoi(b); err != nil {
				return nil, fmt.Errorf("slot range %q: %w", part, err)
			}
		}
		if lo < 0 || hi < lo || hi >= 16384 {
			return nil, fmt.Errorf("slot range %q: want 0 <= lo <= hi < 16384", part)
		}
		out = append(out, slotRange{lo, hi})
	}
	return out, nil
}

func inSlots(rs []slotRange, slot int) bool {
	for _, r := range rs {
		if slot >= r.lo && slot <= r.hi {
			return true
		}
	}
	return false
}

// HashSlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key, or of its hash tag (the
// text between the first '{' and the next '}', when not empty), modulo 16384.
func HashSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// endpointSlots returns, per endpoint, the hash slots of the keys its operations named.
func (idx *index) endpointSlots() map[string][]int {
	out := map[string][]int{}
	seen := map[string]bool{}
	for _, e := range idx.ops {
		if e.Endpoint == "" || e.Op == nil || e.Op.Key == "" || seen[e.Endpoint+"\x00"+e.Op.Key] {
			continue
		}
		seen[e.Endpoint+"\x00"+e.Op.Key] = true
		s := HashSlot(e.Op.Key)
		if !slices.Contains(out[e.Endpoint], s) {
			out[e.Endpoint] = append(out[e.Endpoint], s)
		}
	}
	return out
}

// shardSummary counts what checkShardGaps judged, for the failover summary.
type shardSummary struct {
	faults, healthy, touched, outside, unplaced int
	tabled                                      int // on touched slots, judged by liveness against the bound table
	overlapped                                  int // shard faults not judged: another fault overlapped them
}

func (s shardSummary) String() string {
	skipped := ""
	if s.overlapped > 0 {
		skipped = fmt.Sprintf("; %d shard faults not judged by shard (another fault overlapped them)", s.overlapped)
	}
	if s.faults == 0 {
		return skipped
	}
	out := skipped + fmt.Sprintf("; %s: %s on untouched slots held to their cadence (handoffs to the specification's bound)", count(s.faults, "shard fault", "shard faults"), count(s.healthy, "endpoint", "endpoints"))
	if s.touched > 0 {
		out += fmt.Sprintf(", %d on touched slots to the scenario's", s.touched)
	}
	if s.tabled > 0 {
		out += fmt.Sprintf(", %d on touched slots to the bound table's deadline for the fault (judged by liveness)", s.tabled)
	}
	if s.outside > 0 {
		out += fmt.Sprintf(", %d on touched slots not judged (the fault is declared outside the assumptions)", s.outside)
	}
	if s.unplaced > 0 {
		out += fmt.Sprintf(", %d not placed (no operation names their keys)", s.unplaced)
	}
	return out
}

// checkShardGaps adds a violation for each endpoint that went unpolled longer than its bound across a
// shard fault (see above) and returns what it judged.
func checkShardGaps(idx *index, c *collector) shardSummary {
	var sum shardSummary
	var slotsOf map[string][]int
	spec := SpecFailoverBound(idx.meta.LeaseTTL)
	for _, fe := range idx.faults {
		f := fe.Fault
		param, ok := f.Params[ShardSlotsParam]
		if !ok || f.Err != "" {
			continue
		}
		rs, err := parseSlots(param)
		if err != nil {
			c.add(Violation{At: fe.At, Events: []int64{fe.Seq},
				Message: fmt.Sprintf("%s %s: its %q parameter cannot be read (%v), so the endpoints it spared cannot be judged", f.ID, f.Name, ShardSlotsParam, err)})
			continue
		}
		if slotsOf == nil {
			slotsOf = idx.endpointSlots()
		}
		outside := slices.Contains(idx.meta.Assumptions.Outside, f.Name)
		end := idx.faultEnd(fe)
		_, tabled := timingOf(idx.meta)
		if !tabled && overlapsOtherFault(idx, fe, fe.At, end+max(spec, idx.meta.FailoverBound)) {
			// Another fault (a crash, a pause, a partition) may explain a stall on any shard: the
			// failover check judges that one.
			sum.overlapped++
			continue
		}
		sum.faults++
		node := f.Params["node"]
		if node == "" {
			node = f.Params["from"]
		}
		for _, ep := range idx.pollEndpoints() {
			if !idx.activeAt(ep, fe.At) {
				continue
			}
			slots := slotsOf[ep]
			if len(slots) == 0 {
				sum.unplaced++
				continue
			}
			touched := false
			for _, s := range slots {
				touched = touched || inSlots(rs, s)
			}
			bound, where := spec, "a shard the fault did not touch"
			switch {
			case touched && tabled:
				// The bound table's deadline for the fault (a promotion re-arms the guard: the promotion,
				// notice and a TTL), scoped to its slots, is judged by liveness over the whole run.
				sum.tabled++
				continue
			case touched && outside:
				sum.outside++
				continue
			case touched:
				sum.touched++
				bound, where = idx.meta.FailoverBound, "a slot the fault touched"
			default:
				sum.healthy++
			}
			if deactivatedWithin(idx, ep, fe.At, end+bound) {
				continue
			}
			var g shardGapFound
			var ok bool
			if touched {
				g, ok = shardGap(idx, ep, fe.At, end+bound, func(_, _ *history.Event) (time.Duration, bool) { return bound, false })
			} else {
				cadence := cadenceBound(idx.meta.PollInterval, paceBefore(idx, ep, fe.At), spec)
				g, ok = shardGap(idx, ep, fe.At, end+spec, func(prev, next *history.Event) (time.Duration, bool) {
					if next != nil && next.Instance == prev.Instance {
						return cadence, true
					}
					return spec, false
				})
				if ok && tabled {
					// Another fault that hindered this endpoint (one that hit its holder, or the whole
					// backend) may excuse the gap until its own deadline; one that hindered nothing
					// (a drift, a fault on another instance) excuses nothing.
					stop, taker := idx.end, ""
					if g.next != nil {
						stop, taker = g.next.At, g.next.Instance
					}
					d := idx.extended(Deadline{At: g.from + g.bound}, ep, g.from, stop, taker, fe)
					if g.to <= d.At {
						continue
					}
					g.bound = d.At - g.from
				}
			}
			if !ok {
				continue
			}
			r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
			what := fmt.Sprintf("was not polled for %v (from %v to %v)", r(g.to-g.from), r(g.from), r(g.to))
			switch {
			case g.cadence:
				what = fmt.Sprintf("was not polled by its holder %s for %v after a poll (from its end at %v to %v), over its cadence bound %v",
					g.prev.Instance, r(g.to-g.from), r(g.from), r(g.to), r(g.bound))
			case g.next != nil && g.next.Instance != g.prev.Instance:
				what += fmt.Sprintf(", handed over from %s to %s, over the bound %v", g.prev.Instance, g.next.Instance, g.bound)
			default:
				what += fmt.Sprintf(", over the bound %v", g.bound)
			}
			v := Violation{At: g.from, Endpoint: ep, Events: []int64{fe.Seq, g.prev.Seq}, Instances: []string{g.prev.Instance},
				From: g.from, To: g.to, Over: g.to - g.from - g.bound,
				Message: fmt.Sprintf("%s %s (%s, slots %s): %s (slot %s, on %s) %s",
					f.ID, f.Name, nodeOrAll(node), param, ep, joinInts(slots), where, what)}
			if g.next != nil {
				v.Events = append(v.Events, g.next.Seq)
				if g.next.Instance != g.prev.Instance {
					v.Instances = append(v.Instances, g.next.Instance)
				}
			}
			c.add(v)
		}
	}
	return sum
}

// overlapsOtherFault reports whether a fault other than fe overlaps [from, to].
func overlapsOtherFault(idx *index, fe *history.Event, from, to time.Duration) bool {
	for _, g := range idx.faults {
		if g != fe && g.At <= to && idx.faultEnd(g) >= from {
			return true
		}
	}
	return false
}

// shardGapFound is a gap between two polls of an endpoint (next nil: still open at the run's end)
// that exceeded its bound, measured from from to to.
type shardGapFound struct {
	from, to   time.Duration
	bound      time.Duration
	cadence    bool // measured from the end of prev, against its holder's cadence
	prev, next *history.Event
}

// shardGap returns the gap between successive polls of ep that reached the resource that most exceeds
// its bound, among those from the last poll at or before from to the first that begins after to (a gap
// that was already over its bound when the fault began included).
// boundOf gives a gap's bound, and whether it is measured from the end of the first poll (true) or
// from its start; a gap still open at the end of the run is measured from its start once the run
// outlived the bound.
func shardGap(idx *index, ep string, from, to time.Duration, boundOf func(prev, next *history.Event) (time.Duration, bool)) (shardGapFound, bool) {
	polls := idx.polls[ep]
	prev, i := lastReachedBy(polls, from)
	if prev == nil {
		return shardGapFound{}, false // never polled before the fault: nothing was going on to keep going
	}
	var worst shardGapFound
	var excess time.Duration
	for ; prev.At <= to; i++ {
		for i < len(polls) && !reached(polls[i]) {
			i++
		}
		g := shardGapFound{from: prev.At, to: idx.end, prev: prev}
		if i < len(polls) {
			g.next = polls[i]
			g.to = g.next.At
		}
		g.bound, g.cadence = boundOf(prev, g.next)
		if g.cadence && prev.End >= prev.At && prev.End != history.Infinity {
			g.from = prev.End
		}
		if e := g.to - g.from - g.bound; e > 0 && e > excess {
			worst, excess = g, e
		}
		if g.next == nil {
			break
		}
		prev = g.next
	}
	return worst, excess > 0
}

// cadenceBound is the longest a spared endpoint may go between two polls by one holder: the poll
// interval + FailoverTolerance; for an endpoint whose pace before the fault was slower, that pace plus a
// quarter of it (a pace read off the few gaps before the fault is an estimate: a quarter more is a
// change of pace, not jitter), at least plus FailoverTolerance; never more than the specification's
// bound.
func cadenceBound(pollInterval, pace, spec time.Duration) time.Duration {
	b := pollInterval + FailoverTolerance
	if pace > pollInterval {
		b = max(b, pace+max(FailoverTolerance, pace/4))
	}
	return min(b, spec)
}

// paceBefore is the pace an endpoint kept before the fault at at: the second longest gap, end of one
// poll to start of the next, between successive polls of ep that both reached the resource and ended
// before the fault, whoever made them. A system that releases between polls and locks again, by the
// same instance or another, repeats its longest gap and has that pace; a single long gap (one handoff,
// one slow poll) is not a pace, and the second longest is the pace kept around it.
func paceBefore(idx *index, ep string, at time.Duration) time.Duration {
	var first, second time.Duration
	var prev *history.Event
	for _, p := range idx.polls[ep] {
		if !reached(p) {
			continue
		}
		if p.End == history.Infinity || max(p.At, p.End) >= at {
			break
		}
		if prev != nil {
			g := p.At - max(prev.At, prev.End)
			switch {
			case g > first:
				first, second = g, first
			case g > second:
				second = g
			}
		}
		prev = p
	}
	return second
}

func nodeOrAll(node string) string {
	if node == "" {
		return "node not recorded"
	}
	return "node " + node
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}
