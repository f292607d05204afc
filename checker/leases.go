package checker

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Confirmed leases: the stretches in which an instance's own confirmed acquisitions and renewals entitle
// it to act on an endpoint. An acquire or renewal that the instance saw succeed (answered OK, with a
// reply, and replicated when the system waits for WAIT) entitles it from the reply until the request +
// TTL·(1 − drift bound): the key cannot have been written before the request was sent, so it lives at
// most until request + TTL, and a holder whose clock errs within the drift bound stops by then. Windows
// that meet or overlap join, since a renewal confirmed inside one carries the lease on.

// validWindow is a stretch of run time in which an instance's confirmed lease entitles it to act on an
// endpoint.
type validWindow struct {
	from, to time.Duration
	first    *history.Event // the operation that set from
	last     *history.Event // the operation that set to
}

// leaseKey names one instance's leases on one endpoint.
type leaseKey struct{ inst, ep string }

// leases are the confirmed leases of a history.
type leases struct {
	windows map[leaseKey][]validWindow
	// tried holds the pairs where the instance asked for the endpoint, whatever the answer.
	tried map[leaseKey]bool
	// any is set when the history holds an acquire or a renewal at all (the system's backend calls are
	// modelled).
	any bool
}

// newLeases builds the confirmed leases of idx.
func newLeases(idx *index) *leases {
	ls := &leases{windows: map[leaseKey][]validWindow{}, tried: map[leaseKey]bool{}}
	grants := map[leaseKey][]*history.Event{}
	blind := map[leaseKey][]*history.Event{} // confirmed unconditional renewals (PEXPIRE), by who sent them
	releases := map[leaseKey][]release{}
	attempts := map[leaseKey][]*history.Event{} // every acquire sent, whatever became of it
	nodes := map[string]map[string]bool{}       // endpoint -> the independent nodes its keys live on
	for _, e := range idx.ops {
		if e.Endpoint != "" && e.Op.Node != "" {
			if nodes[e.Endpoint] == nil {
				nodes[e.Endpoint] = map[string]bool{}
			}
			nodes[e.Endpoint][e.Op.Node] = true
		}
		if e.Op.Kind == history.OpRelease && e.Endpoint != "" {
			k := leaseKey{e.Instance, e.Endpoint}
			// Done when answered; one unanswered may take effect until its caller gave up, or when
			// the harness saw it land.
			done := e.End
			if unanswered(e) || e.End == history.Infinity {
				done = max(gaveUp(e, idx.fig), e.Op.Landed)
			}
			releases[k] = append(releases[k], release{e, done})
		}
	}
	for _, e := range idx.ops {
		if e.Op.Kind != history.OpAcquire && e.Op.Kind != history.OpRenew {
			continue
		}
		ls.any = true
		k := leaseKey{e.Instance, e.Endpoint}
		ls.tried[k] = true
		if e.Op.Kind == history.OpAcquire {
			attempts[k] = append(attempts[k], e)
		}
		// A write WAIT did not confirm (NotReplicated) is no confirmed lease: a failover may discard it,
		// and a system that waits for WAIT does not count it.
		if !e.Op.OK || e.Op.Unknown || e.Op.NotReplicated || e.End == history.Infinity || e.End < e.At || e.Endpoint == "" {
			continue
		}
		switch {
		case ownedBy(e.Op.Owner, e.Instance) || idx.opaqueOwner(e.Op.Owner, e.Instance):
			grants[k] = append(grants[k], e)
		case e.Op.Kind == history.OpRenew && e.Op.Owner == history.AnyOwner:
			blind[k] = append(blind[k], e)
		}
	}
	// What may have put a value back in its key, or shown it gone, between two moments: another
	// owner's grant of the key (it was not the value's then), or a revival (a restore, a promotion, a
	// restart from an append-only file) of the key's slots.
	granted := map[string][]*history.Event{}
	for _, e := range idx.ops {
		if e.Op.Kind == history.OpAcquire && e.Op.OK && !unanswered(e) && e.Endpoint != "" {
			granted[e.Endpoint] = append(granted[e.Endpoint], e)
		}
	}
	revs := revivalsOf(idx)
	clocks := clockRates(idx)
	rewritten := func(g *history.Event, from, to time.Duration) bool {
		for _, a := range granted[g.Endpoint] {
			if a.Op.Owner != g.Op.Owner && a.End > from && a.At < to {
				return true
			}
		}
		for _, r := range revs {
			if r.at >= from && r.at <= to && touches(r.slots, g.Op.Key) {
				return true
			}
		}
		return false
	}
	for k := range ls.tried {
		gs := grants[k]
		if n := len(nodes[k.ep]); n > 1 {
			gs = majority(gs, n, idx.fig.opTimeout)
		}
		if ws := validWindows(gs, blind[k], releases[k], attempts[k], rewritten, clocks, idx.meta.LeaseTTL, idx.meta.Assumptions.DriftBound); len(ws) > 0 {
			ls.windows[k] = ws
		}
	}
	return ls
}

// release is a release an instance sent, and the latest moment it may have taken effect.
type release struct {
	e    *history.Event
	done time.Duration
}

// majority keeps, of one instance's grants of an endpoint whose keys live on n independent nodes (a
// lock held on a majority of them, as redlock holds it), those of a round a majority of the nodes
// granted: the grants of distinct nodes sent within a call bound of one another. A grant by a minority
// confirms nothing.
func majority(gs []*history.Event, n int, bound time.Duration) []*history.Event {
	var out []*history.Event
	for _, g := range gs {
		if g.Op.Node == "" {
			out = append(out, g)
			continue
		}
		granted := map[string]bool{}
		for _, o := range gs {
			if o.Op.Node != "" && o.At >= g.At-bound && o.At <= g.At+bound {
				granted[o.Op.Node] = true
			}
		}
		if 2*len(granted) > n {
			out = append(out, g)
		}
	}
	return out
}

// at returns the window of inst's confirmed lease on ep that contains t, if any, and the index in its
// windows where t would go.
func (ls *leases) at(inst, ep string, t time.Duration) (validWindow, int, bool) {
	ws := ls.windows[leaseKey{inst, ep}]
	i, found := slices.BinarySearchFunc(ws, t, func(w validWindow, t time.Duration) int {
		switch {
		case w.to < t:
			return -1
		case w.from > t:
			return 1
		}
		return 0
	})
	if found {
		return ws[i], i, true
	}
	return validWindow{}, i, false
}

// valid reports whether poll p lies inside its poller's confirmed lease (a poll cut short by its context
// may end up to cutSlack later).
func (ls *leases) valid(p *history.Event, ttl time.Duration, drift float64) bool {
	w, _, ok := ls.at(p.Instance, p.Endpoint, p.At)
	return ok && pollEnd(p) <= w.to+cutSlack(p, ttl, drift)
}

// opaqueOwner reports whether an owner value that does not carry inst's ID is still inst's own: a
// concrete value (not history.AnyOwner) that names no other instance of the run. Libraries write a
// random token of their own as the lock's value (redis-py's Lock, redlock); the instance that sent the
// acquire and saw it succeed holds that value.
func (idx *index) opaqueOwner(owner, inst string) bool {
	if owner == "" || owner == history.AnyOwner {
		return false
	}
	for _, other := range idx.instances {
		if other != inst && strings.Contains(owner, other) {
			return false
		}
	}
	return true
}

// ownedBy reports whether an operation's owner value identifies inst: the instance ID itself, or the
// instance ID followed by ":" and a per-holding suffix.
func ownedBy(owner, inst string) bool {
	return owner == inst || strings.HasPrefix(owner, inst+":")
}

// cutSlack is how far a poll cut short by its context may end past the validity bound: the system cuts
// it at its own deadline, but the harness stamps the end only when it sees the cancellation, so its own
// scheduling delay shows there. The slack stops where the key itself may expire (request + TTL), past
// which another holder may have been granted the endpoint.
func cutSlack(p *history.Event, ttl time.Duration, drift float64) time.Duration {
	if p.Poll.Outcome != history.PollCancelled {
		return 0
	}
	return time.Duration(float64(ttl) * drift)
}

// validWindows turns confirmed grants into joined windows, sorted by start. An unconditional renewal
// (PEXPIRE) extends whoever holds the key: it extends the sender's own lease only when its reply came
// while that lease, by the sender's earlier confirmed grants, still held (the key then still named the
// sender when the renewal was applied). A release of the value the holder sent ends what it knew: a
// grant's window ends at the first release of its value (or of whatever the key held) sent that had
// not completed when the grant was sent (one sent before the grant's reply, or racing it, leaves the
// grant nothing: the release may have come after it). A release of an older value of its own leaves a
// new one alone. So does one the history shows did not delete the grant's value: a renewal of the value
// sent after the release had taken effect, whatever it did, was granted (a renewal compares the owner:
// the key held the value then), and no acquire of the value other than the grant may have landed
// between the release and that renewal to put it back (an election's value is its candidate ID, the
// same every term, and its release, which also compares the term, finds a later term in the key and
// leaves it), nor did anything else (rewritten: another owner's grant, which shows the value gone, or a
// revival, which may have brought it back).
func validWindows(gs, blind []*history.Event, rels []release, attempts []*history.Event, rewritten func(g *history.Event, from, to time.Duration) bool,
	clocks map[string][]clockRate, ttl time.Duration, drift float64) []validWindow {
	// survived reports whether r, a release of g's value, is shown by the history not to have
	// deleted the value g set.
	survived := func(r release, g *history.Event) bool {
		for _, n := range gs {
			if n.Op.Kind != history.OpRenew || n.Op.Owner != g.Op.Owner || n.Op.Owner == history.AnyOwner || n.At < r.done ||
				rewritten(g, r.e.At, n.At) {
				continue
			}
			back := false // an acquire of the value that may have put it back after r
			for _, a := range attempts {
				latest := a.End
				if unanswered(a) || a.Op.Unknown {
					latest = history.Infinity
				}
				if a != g && a.Op.Owner == g.Op.Owner && a.At < n.At && latest >= r.e.At {
					back = true
					break
				}
			}
			if !back {
				return true
			}
		}
		return false
	}
	window := func(g *history.Event) validWindow {
		t := ttl
		if g.Op.TTL > 0 {
			t = min(t, g.Op.TTL)
		}
		w := validWindow{from: g.End, to: onClock(clocks[g.Instance], g.At, time.Duration(float64(t)*(1-drift))), first: g, last: g}
		for _, r := range rels {
			same := r.e.Op.Owner == g.Op.Owner || r.e.Op.Owner == history.AnyOwner || g.Op.Owner == history.AnyOwner
			if same && r.done >= g.At && r.e.At < w.to && !survived(r, g) {
				w.to = r.e.At
			}
		}
		return w
	}
	type candidate struct {
		w     validWindow
		blind bool
	}
	var cs []candidate
	for _, g := range gs {
		cs = append(cs, candidate{window(g), false})
	}
	for _, g := range blind {
		cs = append(cs, candidate{window(g), true})
	}
	slices.SortStableFunc(cs, func(a, b candidate) int { return cmp.Compare(a.w.from, b.w.from) })
	var out []validWindow
	for _, c := range cs {
		w := c.w
		if w.to <= w.from {
			continue
		}
		n := len(out)
		joins := n > 0 && w.from <= out[n-1].to
		if c.blind && !joins {
			continue
		}
		if joins {
			if w.to > out[n-1].to {
				out[n-1].to, out[n-1].last = w.to, w.last
			}
			continue
		}
		out = append(out, w)
	}
	return out
}

// clockRate is a stretch in which an instance's clock ran at rate (1 = real time): a clock-drift fault
// inside the drift bound (one beyond it lies outside the assumptions, and is judged as such).
type clockRate struct {
	from, to time.Duration
	rate     float64
}

// clockRates reads, per instance, the stretches its clock drifted within the drift bound.
func clockRates(idx *index) map[string][]clockRate {
	b := idx.meta.Assumptions.DriftBound
	out := map[string][]clockRate{}
	for _, f := range idx.faults {
		if !strings.EqualFold(f.Fault.Name, driftFault) || f.Fault.Err != "" {
			continue
		}
		r, err := strconv.ParseFloat(f.Fault.Params["rate"], 64)
		if err != nil || r <= 0 || math.Abs(r-1) > b+1e-9 {
			continue
		}
		for _, in := range f.Fault.Targets {
			out[in] = append(out[in], clockRate{f.At, idx.faultEnd(f), r})
		}
	}
	return out
}

// onClock is the run-time moment at which a clock that ran at the rates given (1 outside them) has
// advanced by local since t0: where a holder's deadline, local time after its request, falls. A clock
// slow within the drift bound reaches it later than the run's clock does, one fast sooner; either way
// the deadline the system computes on its own clock is what it can keep.
func onClock(rates []clockRate, t0, local time.Duration) time.Duration {
	if len(rates) == 0 {
		return t0 + local
	}
	at, left := t0, float64(local)
	for left > 0 {
		rate, next := 1.0, time.Duration(math.MaxInt64)
		for _, c := range rates {
			switch {
			case c.from <= at && at < c.to:
				rate, next = c.rate, min(next, c.to)
			case c.from > at:
				next = min(next, c.from)
			}
		}
		if next == time.Duration(math.MaxInt64) || float64(next-at)*rate >= left {
			return at + time.Duration(left/rate)
		}
		left -= float64(next-at) * rate
		at = next
	}
	return at
}
