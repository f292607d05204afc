package lease

import (
	"slices"
	"strings"
)

// Assign computes the preferred owner of every endpoint among instances: bounded-load rendezvous
// (highest-random-weight) hashing. It is a pure function of the two sets (order and duplicates do not
// matter), so every instance that sees the same fleet and the same targets computes the same answer.
//
// With E endpoints and N instances, every instance is assigned either floor(E/N) or ceil(E/N)
// endpoints, and exactly E mod N instances get the larger number. Endpoints are placed one at a time,
// in an order fixed by their hash, each on the instance with the highest hash weight among those still
// below their cap. Without caps this is plain rendezvous hashing, which moves only the endpoints of an
// instance that leaves (or about 1/N of them to one that joins); the caps add a few moves at the margin.
//
// The result maps endpoint to instance; it is empty when instances is empty. The cost is one hash
// weight per endpoint and instance still below its cap, and a radix sort of the endpoints' hashes: about
// 50 ms of one core for 100 instances and 100,000 endpoints. The manager does not call it on every
// round: it computes the same answer for itself alone from lists it keeps between rounds (ownShare).
func Assign(instances, endpoints []string) map[string]string {
	insts := dedupe(instances)
	out := make(map[string]string, len(endpoints))
	if len(insts) == 0 || len(endpoints) == 0 {
		return out
	}
	assignOrdered(insts, sortByHash(endpoints), func(e hashed, b int) { out[e.id] = insts[b] })
	return out
}

// assignOrdered runs Assign's placement over insts (sorted, distinct) and order (sortByHash's
// result, not empty), calling place for every endpoint with the index of its instance in insts. It
// lets a caller that keeps order between calls (the targets change far less often than the fleet)
// skip the sort, and one that wants only its own share skip building the whole map.
func assignOrdered(insts []string, order []hashed, place func(e hashed, owner int)) {
	ih := make([]uint64, len(insts))
	for i, id := range insts {
		ih[i] = mix64(hash64(id))
	}

	n := len(insts)
	q, r := len(order)/n, len(order)%n
	load := make([]int, n)
	big := 0 // instances already at q+1
	// open lists, in instance order, the instances below their cap: those with fewer than q endpoints,
	// and those with q while fewer than r instances have q+1 (openH holds their hashes). Scanning only
	// these, rather than every instance, gives the same choice and skips the instances that are full.
	open := make([]int, n)
	openH := make([]uint64, n)
	for i := range open {
		open[i], openH[i] = i, ih[i]
	}
	closeWhere := func(full func(i int) bool) {
		k := 0
		for j, i := range open {
			if !full(i) {
				open[k], openH[k] = i, openH[j]
				k++
			}
		}
		open, openH = open[:k], openH[:k]
	}
	for _, e := range order {
		best, bestScore := 0, mix64(e.h^openH[0])
		for j := 1; j < len(openH); j++ {
			if s := mix64(e.h ^ openH[j]); s > bestScore {
				best, bestScore = j, s
			}
		}
		b := open[best]
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
		place(e, b)
	}
}

// hashed is an endpoint with its hash.
type hashed struct {
	id string
	h  uint64
}

// sortByHash returns the distinct endpoints ordered by hash, then by ID: a radix sort on the hash
// (eight byte-wide passes), then a sort by ID within the rare runs of equal hashes, where duplicates
// become adjacent and are dropped.
func sortByHash(endpoints []string) []hashed {
	a := make([]hashed, len(endpoints))
	for i, e := range endpoints {
		a[i] = hashed{e, hash64(e)}
	}
	b := make([]hashed, len(a))
	for shift := uint(0); shift < 64; shift += 8 {
		var count [257]int
		for _, x := range a {
			count[(x.h>>shift)&0xff+1]++
		}
		if count[1+(a[0].h>>shift)&0xff] == len(a) {
			continue // every key has this byte: the pass would change nothing
		}
		for i := 1; i < len(count); i++ {
			count[i] += count[i-1]
		}
		for _, x := range a {
			d := (x.h >> shift) & 0xff
			b[count[d]] = x
			count[d]++
		}
		a, b = b, a
	}
	for i := 0; i < len(a); {
		j := i + 1
		for j < len(a) && a[j].h == a[i].h {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(a[i:j], func(x, y hashed) int { return strings.Compare(x.id, y.id) })
		}
		i = j
	}
	return slices.CompactFunc(a, func(x, y hashed) bool { return x.id == y.id })
}

func dedupe(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// hash64 is 64-bit FNV-1a (as hash/fnv's New64a), without allocating.
func hash64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the SplitMix64 finaliser: it spreads FNV's weak low bits over the whole word.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
