package lease

import (
	"slices"
	"strings"
)

// ownShare computes the part of Assign one instance needs, the endpoints Assign gives it, and keeps
// what does not change between discovery rounds. A fleet recomputes the assignment on every instance
// whenever an instance joins or leaves, and all at once when a dead instance's heartbeat expires, so
// the cost of one computation is on the takeover's path: with 100 instances and 10,000 endpoints,
// Assign spends about 2 ms of a core, mostly scoring every endpoint against every instance, and 100
// instances doing so at the same moment delayed takeovers on a 2-core machine by about 200 ms.
//
// What is kept:
//   - the targets' hash order (Assign's sortByHash), recomputed only when the target list changes;
//   - for every endpoint, a candidate list: the instances of the fleet with the highest scores
//     (mix64(endpoint hash ^ instance hash), Assign's weight), best first, at most shareCandidates.
//
// Assign places each endpoint, in hash order, on the open instance (below its cap) with the highest
// score. Invariant: every fleet member missing from an endpoint's list scores below every member on
// it. Then the first open instance on the list is Assign's choice; when none on the list is open
// (late in the pass, when most instances are full), the endpoint is scored against every open
// instance, as Assign does. The result is Assign's exactly (TestOwnShareMatchesAssign).
//
// Keeping the lists: an instance that leaves is dropped from them (what remains is still the top of
// the list); one that joins is scored once per endpoint and inserted where it beats the last entry,
// or appended where the list held the whole fleet. A list that has shrunk below half its length is
// rebuilt from the whole fleet. A join or a leave therefore costs one score per endpoint instead of
// one per endpoint and instance, and placing an endpoint usually checks one or two candidates.
type ownShare struct {
	targets []string        // the list order and set were computed from
	order   []hashed        // sortByHash(targets)
	set     map[string]bool // every target

	fleet []string // the instances the candidate lists describe, sorted
	// Instances are numbered by slot, stable while they stay in the fleet: slotID[s] and slotH[s] are
	// the ID and mix64(hash64(ID)) of slot s; free lists the slots of instances that left.
	slotID []string
	slotH  []uint64
	slotOf map[string]int32
	free   []int32
	cand   []int32 // shareCandidates slots per endpoint of order, best first
	ncand  []uint8 // how many of each endpoint's entries are in use

	// A result computed ahead of need (prepare): for fleet preparedFor, the endpoints of preparedSelf.
	preparedFor  []string
	preparedSelf string
	prepared     map[string]bool
}

// prepare computes what assigned(insts, self) returns and keeps it for that call.
func (c *ownShare) prepare(insts []string, self string) {
	out := c.assigned(insts, self)
	c.preparedFor, c.preparedSelf, c.prepared = slices.Clone(insts), self, out
}

// shareCandidates is the length of a candidate list. Longer lists fall back to a full scoring less
// often late in the pass and cost more memory (4 bytes per entry and endpoint) and upkeep.
const shareCandidates = 8

// update makes the cache describe targets (any order, duplicates allowed); it reports whether they
// changed.
func (c *ownShare) update(targets []string) bool {
	if c.set != nil && sameList(c.targets, targets) {
		return false
	}
	c.targets = targets
	c.order = nil
	if len(targets) > 0 {
		c.order = sortByHash(targets)
	}
	c.set = make(map[string]bool, len(targets))
	for _, t := range targets {
		c.set[t] = true
	}
	c.fleet, c.cand, c.ncand = nil, nil, nil // rebuilt for the new endpoints at the next call
	c.prepared = nil
	return true
}

// assigned returns the endpoints Assign(insts, c.targets) gives self; insts must be sorted and
// distinct and contain self.
func (c *ownShare) assigned(insts []string, self string) map[string]bool {
	if c.prepared != nil && self == c.preparedSelf && slices.Equal(insts, c.preparedFor) {
		out := c.prepared
		c.prepared = nil // the caller keeps it; it is not modified
		return out
	}
	out := make(map[string]bool)
	me, found := slices.BinarySearch(insts, self)
	if !found || len(c.order) == 0 {
		return out
	}
	c.follow(insts)
	n := len(insts)
	pos := make([]int32, len(c.slotID)) // slot -> index in insts
	ih := make([]uint64, n)
	for i, id := range insts {
		s := c.slotOf[id]
		pos[s], ih[i] = int32(i), c.slotH[s]
	}

	q, r := len(c.order)/n, len(c.order)%n
	load := make([]int, n)
	isOpen := make([]bool, n)
	big := 0
	// As in assignOrdered: open lists the instances below their cap, in instance order.
	open := make([]int, n)
	openH := make([]uint64, n)
	for i := range open {
		open[i], openH[i], isOpen[i] = i, ih[i], true
	}
	closeWhere := func(full func(i int) bool) {
		k := 0
		for j, i := range open {
			if full(i) {
				isOpen[i] = false
				continue
			}
			open[k], openH[k] = i, openH[j]
			k++
		}
		open, openH = open[:k], openH[:k]
	}
	for e, x := range c.order {
		b := -1
		for _, s := range c.cand[e*shareCandidates : e*shareCandidates+int(c.ncand[e])] {
			if i := int(pos[s]); isOpen[i] {
				b = i
				break
			}
		}
		if b < 0 {
			best, bestScore := 0, mix64(x.h^openH[0])
			for j := 1; j < len(openH); j++ {
				if s := mix64(x.h ^ openH[j]); s > bestScore {
					best, bestScore = j, s
				}
			}
			b = open[best]
		}
		load[b]++
		switch {
		case load[b] == q+1:
			big++
			if big >= r {
				closeWhere(func(i int) bool { return load[i] >= q })
			} else {
				closeWhere(func(i int) bool { return i == b })
			}
		case load[b] == q && big >= r:
			closeWhere(func(i int) bool { return i == b })
		}
		if b == me {
			out[x.id] = true
		}
	}
	return out
}

// follow brings the candidate lists from c.fleet to insts (sorted, distinct).
func (c *ownShare) follow(insts []string) {
	if c.cand != nil && slices.Equal(c.fleet, insts) {
		return
	}
	var gone, added []string
	for _, id := range c.fleet {
		if _, ok := slices.BinarySearch(insts, id); !ok {
			gone = append(gone, id)
		}
	}
	for _, id := range insts {
		if _, ok := slices.BinarySearch(c.fleet, id); !ok {
			added = append(added, id)
		}
	}
	// Many newcomers (the first call, a fleet read after a partition): scoring every endpoint against
	// every instance once is cheaper than inserting them one by one, which costs about two scores per
	// endpoint and newcomer against one per endpoint and instance.
	fresh := c.cand == nil || 2*len(added) > len(insts)
	if fresh {
		c.slotID, c.slotH, c.free = nil, nil, nil
		c.slotOf = make(map[string]int32, len(insts))
		c.cand = make([]int32, len(c.order)*shareCandidates)
		c.ncand = make([]uint8, len(c.order))
		gone, added = nil, insts
	}
	stayed := len(c.fleet) - len(gone)
	if fresh {
		stayed = 0
	}
	if len(gone) > 0 {
		dead := make([]bool, len(c.slotID))
		for _, id := range gone {
			s := c.slotOf[id]
			dead[s] = true
			delete(c.slotOf, id)
			c.free = append(c.free, s)
		}
		for e := range c.order {
			l := c.cand[e*shareCandidates : e*shareCandidates+int(c.ncand[e])]
			k := 0
			for _, s := range l {
				if !dead[s] {
					l[k] = s
					k++
				}
			}
			c.ncand[e] = uint8(k)
		}
	}
	newSlots := make([]int32, len(added))
	for i, id := range added {
		var s int32
		if n := len(c.free); n > 0 {
			s, c.free = c.free[n-1], c.free[:n-1]
		} else {
			s = int32(len(c.slotID))
			c.slotID, c.slotH = append(c.slotID, ""), append(c.slotH, 0)
		}
		c.slotID[s], c.slotH[s], c.slotOf[id] = id, mix64(hash64(id)), s
		newSlots[i] = s
	}
	c.fleet = slices.Clone(insts)
	all := make([]int32, len(insts))
	for i, id := range insts {
		all[i] = c.slotOf[id]
	}
	for e, x := range c.order {
		n := int(c.ncand[e])
		if fresh || (n < stayed && n < shareCandidates/2) {
			c.rebuild(e, x.h, all) // new, or shrunk by departures: score the whole fleet
			continue
		}
		members := stayed // fleet members considered so far for this list
		for _, s := range newSlots {
			c.insert(e, x.h, s, int(c.ncand[e]) == members)
			members++
		}
	}
}

// better reports whether slot a, scoring sa, precedes slot b on endpoint hash h's list: a higher
// score, or an equal score and a smaller ID (Assign takes the first of equal scores in instance order).
func (c *ownShare) better(h uint64, a int32, sa uint64, b int32) bool {
	if sb := mix64(h ^ c.slotH[b]); sa != sb {
		return sa > sb
	}
	return strings.Compare(c.slotID[a], c.slotID[b]) < 0
}

// insert puts slot s on endpoint e's list if it belongs there: ahead of the first entry it beats, or
// at the end when the list holds every other member of the fleet (complete) and has room.
func (c *ownShare) insert(e int, h uint64, s int32, complete bool) {
	l := c.cand[e*shareCandidates : (e+1)*shareCandidates]
	n := int(c.ncand[e])
	score := mix64(h ^ c.slotH[s])
	// From the bottom: most newcomers score below the whole list, which one comparison shows.
	at := n
	for at > 0 && c.better(h, s, score, l[at-1]) {
		at--
	}
	if at == n && (!complete || n == shareCandidates) {
		return // below every entry of a partial list (or of a full one): not among the top
	}
	if n < shareCandidates {
		n++
	}
	copy(l[at+1:n], l[at:n-1])
	l[at] = s
	c.ncand[e] = uint8(n)
}

// rebuild scores endpoint e against every instance (slots all) and keeps the best.
func (c *ownShare) rebuild(e int, h uint64, all []int32) {
	var top [shareCandidates]int32
	var score [shareCandidates]uint64
	n := 0
	for _, s := range all {
		sc := mix64(h ^ c.slotH[s])
		if n == shareCandidates && (sc < score[n-1] || sc == score[n-1] && !c.before(sc, s, score[n-1], top[n-1])) {
			continue // the common case: below the list
		}
		// Insertion from the end: most candidates that get this far belong near the bottom.
		j := min(n, shareCandidates-1)
		for j > 0 && (sc > score[j-1] || sc == score[j-1] && c.before(sc, s, score[j-1], top[j-1])) {
			top[j], score[j] = top[j-1], score[j-1]
			j--
		}
		top[j], score[j] = s, sc
		if n < shareCandidates {
			n++
		}
	}
	copy(c.cand[e*shareCandidates:], top[:n])
	c.ncand[e] = uint8(n)
}

// before reports whether slot a with score sa precedes slot b with score sb (see better).
func (c *ownShare) before(sa uint64, a int32, sb uint64, b int32) bool {
	if sa != sb {
		return sa > sb
	}
	return strings.Compare(c.slotID[a], c.slotID[b]) < 0
}
