package checker

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// maxBalanceSamples caps Report.Balance; longer runs are sampled less often than every poll interval.
const maxBalanceSamples = 2000

// holdersAt returns, for time t, how many active endpoints each instance holds, counting an endpoint as
// held by the instance of its last poll that reached the resource within 2×PollInterval up to t. Every
// live instance appears, with zero if it holds nothing. It also returns the number of active endpoints
// and live instances.
func holdersAt(idx *index, eps []string, t time.Duration) (per map[string]int, active, live int) {
	per = map[string]int{}
	liveNow := idx.startedBefore(t)
	for _, in := range liveNow {
		per[in] = 0
	}
	window := 2 * idx.meta.PollInterval
	for _, ep := range eps {
		if !idx.activeAt(ep, t) {
			continue
		}
		active++
		polls := idx.polls[ep]
		i := sort.Search(len(polls), func(i int) bool { return polls[i].At > t })
		for i--; i >= 0 && polls[i].At > t-window; i-- {
			if reached(polls[i]) {
				per[polls[i].Instance]++
				break
			}
		}
	}
	return per, active, len(liveNow)
}

// balanceSamples samples ownership every PollInterval (less often on long runs) over the whole run.
func balanceSamples(idx *index) []BalanceSample {
	step := idx.meta.PollInterval
	n := int64(idx.end / step)
	if n > maxBalanceSamples {
		n, step = maxBalanceSamples, idx.end/maxBalanceSamples
	}
	eps := idx.pollEndpoints()
	var out []BalanceSample
	for i := int64(1); i <= n; i++ {
		t := time.Duration(i) * step
		per, active, live := holdersAt(idx, eps, t)
		s := BalanceSample{At: t, PerInst: per}
		if live > 0 {
			s.Ideal = float64(active) / float64(live)
		}
		out = append(out, s)
	}
	return out
}

// checkBalance judges SC-004 in the steady windows of lease scenarios that expect balance: at every poll
// interval of each window (and at its end), every live instance must hold floor(E/N) or ceil(E/N)
// endpoints, E the active endpoints and N the live instances. One violation is listed per window, at its
// first unbalanced sample.
func checkBalance(idx *model, opts Options) Result {
	m := idx.meta
	res := Result{Invariant: InvBalance, Outcome: Skipped}
	switch {
	case m.Kind == "election":
		res.Message = "not applicable to leader election"
		return res
	case !m.ExpectBalance:
		res.Message = "the scenario does not expect balance"
		return res
	case len(m.Steady) == 0:
		res.Message = "the scenario has no steady windows"
		return res
	}
	eps := idx.pollEndpoints()
	var c collector
	samples := 0
	for _, w := range m.Steady {
		bad := 0
		var first *Violation
		var last time.Duration
		for t := w.From; ; t += m.PollInterval {
			t = min(t, w.To)
			samples++
			per, active, live := holdersAt(idx.index, eps, t)
			if live > 0 {
				lo := active / live
				hi := int(math.Ceil(float64(active) / float64(live)))
				var off []string
				for _, in := range idx.startedBefore(t) {
					if n := per[in]; n < lo || n > hi {
						off = append(off, fmt.Sprintf("%s holds %d", in, n))
					}
				}
				if len(off) > 0 {
					bad++
					last = t
					if first == nil {
						first = &Violation{At: t, Instances: idx.startedBefore(t),
							Message: fmt.Sprintf("at %v %d endpoints over %d instances should be %d..%d each, but %s",
								t, active, live, lo, hi, strings.Join(off, ", "))}
					}
				}
			}
			if t >= w.To {
				break
			}
		}
		if first != nil {
			// An endpoint counts as held by its last poll within two poll intervals (holdersAt), so the
			// imbalance rests on the polls from then to the last unbalanced sample; it lasted about one
			// poll interval per unbalanced sample.
			first.From, first.To, first.Over = max(0, first.At-2*m.PollInterval), last, time.Duration(bad)*m.PollInterval
			first.Message += fmt.Sprintf(" (%d unbalanced samples in the steady window %v..%v)", bad, w.From, w.To)
			c.add(*first)
		}
	}
	return c.result(InvBalance, opts.MaxViolations,
		fmt.Sprintf("every live instance held within ±1 of E/N in %s over %s", count(samples, "sample", "samples"), count(len(m.Steady), "steady window", "steady windows")),
		fmt.Sprintf("%d of %s unbalanced (not every live instance within ±1 of E/N)", len(c.list), count(len(m.Steady), "steady window was", "steady windows were")))
}
