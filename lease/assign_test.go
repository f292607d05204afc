package lease

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func loads(a map[string]string) map[string]int {
	out := map[string]int{}
	for _, inst := range a {
		out[inst]++
	}
	return out
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func TestAssignThreeByNineIsExact(t *testing.T) {
	t.Parallel()
	a := Assign(ids("inst-", 3), endpoints(9))
	require.Len(t, a, 9)
	for inst, n := range loads(a) {
		require.Equal(t, 3, n, inst)
	}
}

func TestAssignTwoToThree(t *testing.T) {
	t.Parallel()
	eps := endpoints(10)
	before := Assign(ids("inst-", 2), eps)
	require.Equal(t, map[string]int{"inst-0": 5, "inst-1": 5}, loads(before))
	after := Assign(ids("inst-", 3), eps)
	l := loads(after)
	require.Contains(t, []int{3, 4}, l["inst-2"])
	for _, n := range l {
		require.Contains(t, []int{3, 4}, n)
	}
	moved := 0
	for ep, inst := range after {
		if before[ep] != inst {
			moved++
		}
	}
	require.Equal(t, l["inst-2"], moved, "only the newcomer's endpoints move")
}

func TestAssignBoundsAndDeterminism(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 200; i++ {
		n, e := 1+r.Intn(12), r.Intn(80)
		insts, eps := ids("i", n), endpoints(e)
		a := Assign(insts, eps)
		require.Len(t, a, e)
		for _, inst := range insts {
			got := loads(a)[inst]
			require.True(t, got == e/n || got == (e+n-1)/n, "n=%d e=%d load=%d", n, e, got)
		}
		// Order and duplicates do not matter.
		r.Shuffle(len(insts), func(i, j int) { insts[i], insts[j] = insts[j], insts[i] })
		require.Equal(t, a, Assign(append(insts, insts...), eps))
	}
	require.Empty(t, Assign(nil, endpoints(3)))
}

func TestAssignMovesLittleWhenOneLeaves(t *testing.T) {
	t.Parallel()
	insts, eps := ids("inst-", 10), endpoints(1000)
	before := Assign(insts, eps)
	after := Assign(insts[1:], eps)
	moved := 0
	for ep, inst := range after {
		if before[ep] != inst {
			moved++
		}
	}
	// Plain rendezvous would move exactly the leaver's 100; the caps add a few at the margin.
	require.GreaterOrEqual(t, moved, 100)
	require.Less(t, moved, 200, "moved %d of 1000", moved)
}

func BenchmarkAssign(b *testing.B) {
	insts, eps := ids("host-1700000000000000000-", 100), make([]string, 100_000)
	for i := range eps {
		eps[i] = fmt.Sprintf("session-%06d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := Assign(insts, eps)
		if len(a) != len(eps) {
			b.Fatal("incomplete assignment")
		}
	}
	b.ReportMetric(float64(len(insts)), "instances")
	b.ReportMetric(float64(len(eps)), "endpoints")
}

// assignByDefinition is Assign written as its doc states it, scanning every instance for every
// endpoint: the optimised Assign must give the same answer.
func assignByDefinition(instances, endpoints []string) map[string]string {
	insts, eps := dedupe(instances), dedupe(endpoints)
	out := make(map[string]string, len(eps))
	if len(insts) == 0 || len(eps) == 0 {
		return out
	}
	slices.SortStableFunc(eps, func(a, b string) int { return cmp.Compare(hash64(a), hash64(b)) })
	fnvOf := func(s string) uint64 { h := fnv.New64a(); _, _ = h.Write([]byte(s)); return h.Sum64() }
	n := len(insts)
	q, r := len(eps)/n, len(eps)%n
	load := make([]int, n)
	big := 0
	for _, e := range eps {
		best, bestScore := -1, uint64(0)
		for i, id := range insts {
			if load[i] > q || (load[i] == q && big >= r) {
				continue
			}
			if s := mix64(fnvOf(e) ^ mix64(fnvOf(id))); best < 0 || s > bestScore {
				best, bestScore = i, s
			}
		}
		load[best]++
		if load[best] == q+1 {
			big++
		}
		out[e] = insts[best]
	}
	return out
}

func TestAssignMatchesDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(11))
	for i := 0; i < 300; i++ {
		n, e := 1+r.Intn(40), r.Intn(600)
		insts := ids(fmt.Sprintf("h%d-", r.Intn(1000)), n)
		eps := endpoints(e)
		if e > 0 && r.Intn(3) == 0 { // duplicates
			eps = append(eps, eps[:r.Intn(e)]...)
			r.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
		}
		require.Equal(t, assignByDefinition(insts, eps), Assign(insts, eps), "n=%d e=%d", n, e)
	}
}

func TestOwnShareMatchesAssign(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(13))
	var c ownShare
	for i := 0; i < 200; i++ {
		n, e := 1+r.Intn(30), r.Intn(400)
		insts := dedupe(ids(fmt.Sprintf("h%d-", r.Intn(1000)), n))
		eps := endpoints(e)
		if e > 0 && r.Intn(3) == 0 { // duplicates, any order
			eps = append(eps, eps[:r.Intn(e)]...)
			r.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
		}
		if i%4 != 0 || c.set == nil { // the cache is kept across calls; every fourth call sees the same targets again
			c.update(eps)
		} else {
			require.False(t, c.update(slices.Clone(c.targets)), "unchanged targets")
			eps = c.targets
		}
		all := Assign(insts, eps)
		for _, self := range insts {
			want := map[string]bool{}
			for ep, owner := range all {
				if owner == self {
					want[ep] = true
				}
			}
			require.Equal(t, want, c.assigned(insts, self), "n=%d e=%d self=%s", n, len(eps), self)
		}
		for _, ep := range eps {
			require.True(t, c.set[ep])
		}
		require.Len(t, c.set, len(dedupe(eps)))
	}
}

// One instance's share of 10,000 endpoints among 100 instances, as a fleet computes it when one
// instance leaves or joins (the fleet alternates between 99 and 100), and for comparison Assign.
func BenchmarkOwnShare100x10k(b *testing.B) {
	insts, eps := dedupe(ids("inst-", 100)), endpoints(10000)
	fewer := slices.Delete(slices.Clone(insts), 50, 51)
	b.Run("share", func(b *testing.B) {
		var c ownShare
		c.update(eps)
		i := 0
		for b.Loop() {
			if i++; i%2 == 0 {
				c.assigned(insts, insts[7])
			} else {
				c.assigned(fewer, insts[7])
			}
		}
	})
	b.Run("first", func(b *testing.B) { // an instance's first round: every list built
		var c ownShare
		c.update(eps)
		for b.Loop() {
			c.cand = nil
			c.assigned(insts, insts[7])
		}
	})
	b.Run("assign", func(b *testing.B) {
		for b.Loop() {
			Assign(insts, eps)
		}
	})
}

// The candidate lists are kept across fleet changes: a fleet that grows and shrinks a few instances at
// a time, and sometimes many at once, must still get Assign's answer on every instance.
func TestOwnShareFollowsFleetChanges(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(17))
	for run := 0; run < 6; run++ {
		var c ownShare
		eps := endpoints(200 + r.Intn(1500))
		c.update(eps)
		next := 0
		newID := func() string { next++; return fmt.Sprintf("node-%d-%d", run, next) }
		var fleet []string
		for i := 0; i < 1+r.Intn(5); i++ {
			fleet = append(fleet, newID())
		}
		for step := 0; step < 60; step++ {
			switch k := r.Intn(10); {
			case k < 4: // joins
				for j := 0; j < 1+r.Intn(3); j++ {
					fleet = append(fleet, newID())
				}
			case k < 8 && len(fleet) > 1: // leaves
				for j := 0; j < 1+r.Intn(3) && len(fleet) > 1; j++ {
					i := r.Intn(len(fleet))
					fleet = slices.Delete(fleet, i, i+1)
				}
			case k == 8: // a burst of newcomers
				for j := 0; j < 9+r.Intn(20); j++ {
					fleet = append(fleet, newID())
				}
			default: // the targets change
				eps = endpoints(200 + r.Intn(1500))
				c.update(eps)
			}
			insts := dedupe(fleet)
			all := Assign(insts, eps)
			for _, self := range []string{insts[0], insts[len(insts)/2], insts[len(insts)-1]} {
				want := map[string]bool{}
				for ep, owner := range all {
					if owner == self {
						want[ep] = true
					}
				}
				require.Equal(t, want, c.assigned(insts, self), "run %d step %d n=%d self=%s", run, step, len(insts), self)
			}
		}
	}
}

// A prepared result is what assigned would compute for that fleet and instance, and serves one call.
func TestOwnSharePrepared(t *testing.T) {
	t.Parallel()
	insts, eps := dedupe(ids("inst-", 20)), endpoints(500)
	without := slices.Delete(slices.Clone(insts), 5, 6)
	var c ownShare
	c.update(eps)
	c.assigned(insts, insts[3])
	c.prepare(without, insts[3])
	require.NotNil(t, c.prepared)
	want := map[string]bool{}
	for ep, owner := range Assign(without, eps) {
		if owner == insts[3] {
			want[ep] = true
		}
	}
	require.Equal(t, want, c.assigned(without, insts[3]))
	require.Nil(t, c.prepared, "used once")
	c.prepare(without, insts[3])
	require.Equal(t, want, c.assigned(without, insts[3]))
	c.prepare(without, insts[3])
	c.update(endpoints(400))
	require.Nil(t, c.prepared, "new targets drop it")
}
