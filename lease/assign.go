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
// The result maps endpoint to instance; it is empty when instances is empty.
func Assign(instances, endpoints []string) map[string]string {
	insts := dedupe(instances)
	out := make(map[string]string, len(endpoints))
	if len(insts) == 0 || len(endpoints) == 0 {
		return out
	}
	ih := make([]uint64, len(insts))
	for i, id := range insts {
		ih[i] = mix64(hash64(id))
	}
	type ep struct {
		id string
		h  uint64
	}
	order := make([]ep, len(endpoints))
	for i, e := range endpoints {
		order[i] = ep{e, hash64(e)}
	}
	slices.SortFunc(order, func(a, b ep) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	// Equal IDs have equal hashes, so the sort has made duplicates adjacent.
	order = slices.CompactFunc(order, func(a, b ep) bool { return a.id == b.id })

	n := len(insts)
	q, r := len(order)/n, len(order)%n
	load := make([]int, n)
	big := 0 // instances already at q+1
	// open lists, in instance order, the instances below their cap: those with fewer than q endpoints,
	// and those with q while fewer than r instances have q+1. Scanning only these (rather than every
	// instance) keeps the choice the same and saves the work on instances that are full.
	open := make([]int, n)
	for i := range open {
		open[i] = i
	}
	for _, e := range order {
		best, bestScore := -1, uint64(0)
		for _, i := range open {
			if s := mix64(e.h ^ ih[i]); best < 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		load[best]++
		switch {
		case load[best] == q+1:
			big++
			if big >= r {
				open = slices.DeleteFunc(open, func(i int) bool { return load[i] >= q })
			} else {
				open = slices.DeleteFunc(open, func(i int) bool { return i == best })
			}
		case load[best] == q && big >= r:
			open = slices.DeleteFunc(open, func(i int) bool { return i == best })
		}
		out[e.id] = insts[best]
	}
	return out
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

// assignPlain is rendezvous hashing without the load cap: every endpoint goes to the instance with
// the highest weight. Only the plain-rendezvous mutant uses it.
func assignPlain(instances, endpoints []string) map[string]string {
	insts := dedupe(instances)
	out := make(map[string]string, len(endpoints))
	if len(insts) == 0 {
		return out
	}
	for _, e := range dedupe(endpoints) {
		eh := hash64(e)
		best, bestScore := "", uint64(0)
		for _, id := range insts {
			if s := mix64(eh ^ mix64(hash64(id))); best == "" || s > bestScore {
				best, bestScore = id, s
			}
		}
		out[e] = best
	}
	return out
}
