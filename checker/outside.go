package checker

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Faults outside the system's stated assumptions. Inside the assumptions every safety finding is a
// violation. A fault outside them (a process pause, a clock drifting past the bound, a promotion that
// loses acknowledged writes) may explain a finding, but only as far as its magnitude reaches: a pause
// of P can keep a frozen holder acting at most P past its lease; a clock that runs slow by e against a
// drift bound b stretches a TTL by at most TTL·((1−b)/(1−e) − 1); a lost write lets its holder believe
// for at most a TTL after the loss. A finding larger than every explanation is a violation.

// driftFault is the fault name whose "rate" parameter is an instance clock's speed (1 = real time).
const driftFault = "clock-drift"

// outsideFault is a fault that lies outside the system's stated assumptions.
type outsideFault struct {
	e *history.Event
	// declared is set when the history's Assumptions.Outside names the fault; otherwise the checker
	// found it beyond them (a clock drifting past the drift bound) and the run did not say so.
	declared bool
	why      string
	// rate is a drifting clock's speed (clock-drift faults).
	rate float64
}

func (o outsideFault) label() string { return o.e.Fault.ID + " " + o.e.Fault.Name }

// scope says which faults of a run lie outside the system's stated assumptions, and which findings they
// can explain.
type scope struct {
	recorded bool           // the history records its assumptions (older ones do not)
	outside  []outsideFault // in the history's order
	idx      *index
	ef       *effects
}

// assumptionsRecorded reports whether the history header carries assumptions at all: histories written
// before they were recorded carry the zero value, and then no fault is known to lie outside them.
func assumptionsRecorded(a history.Assumptions) bool {
	return a.DriftBound != 0 || a.Persistence != "" || a.Topology != "" || len(a.Outside) > 0
}

// newScope finds the faults outside the assumptions: those whose name the history declares outside,
// and clock-drift faults whose rate error exceeds the recorded drift bound. The latter are judged only
// when the history records its assumptions: without a bound there is nothing to exceed.
func newScope(idx *index, ef *effects) *scope {
	a := idx.meta.Assumptions
	s := &scope{recorded: assumptionsRecorded(a), idx: idx, ef: ef}
	for _, f := range idx.faults {
		rate, rateErr := strconv.ParseFloat(f.Fault.Params["rate"], 64)
		if slices.Contains(a.Outside, f.Fault.Name) {
			s.outside = append(s.outside, outsideFault{e: f, declared: true, why: "declared outside the assumptions", rate: rate})
			continue
		}
		if f.Fault.Name != driftFault || !s.recorded {
			continue
		}
		if rateErr != nil {
			// A drift nobody can measure cannot be shown to lie inside the bound.
			s.outside = append(s.outside, outsideFault{e: f, rate: math.NaN(), why: fmt.Sprintf(
				"its clock rate %q cannot be read, so it cannot be shown to lie within the drift bound %g", f.Fault.Params["rate"], a.DriftBound)})
			continue
		}
		// A rate written exactly at the bound (0.975 against 0.025) is inside it: the tolerance absorbs
		// the float arithmetic of rate-1, as the simulator's own check does.
		if e := math.Abs(rate - 1); e > a.DriftBound+1e-9 {
			s.outside = append(s.outside, outsideFault{e: f, rate: rate, why: fmt.Sprintf(
				"clock rate %g errs by %.3g, beyond the drift bound %g", rate, e, a.DriftBound)})
		}
	}
	return s
}

// reach is how far fault o can carry a finding past its bound, and the stretch of run time in which the
// finding must lie for o to explain it; ok is false for a fault that explains nothing about insts.
func (s *scope) reach(o outsideFault, insts []string) (magnitude time.Duration, from, to time.Duration, ok bool) {
	idx := s.idx
	f := o.e
	end := idx.faultEnd(f)
	hit := len(f.Fault.Targets) == 0
	for _, t := range f.Fault.Targets {
		hit = hit || slices.Contains(insts, t)
	}
	if !hit {
		return 0, 0, 0, false
	}
	ttl := idx.meta.LeaseTTL
	switch {
	case EffectOf(f.Fault) == EffectPaused:
		// The pause from the moment it took hold to its target's wake, as the lifecycle shows it.
		var d time.Duration
		for _, t := range f.Fault.Targets {
			if ie := s.ef.inst[t]; ie != nil {
				for _, p := range ie.paused {
					if p.from >= f.At && p.from <= end {
						d = max(d, min(p.to, idx.end)-p.from)
					}
				}
			}
		}
		if d == 0 {
			// A pause that never took hold (its instance neither polled nor reached the fault's
			// fallback moment) froze nothing, and explains nothing.
			return 0, 0, 0, false
		}
		// A frozen instance acts on what it decided before the freeze as it wakes, and keeps its cadence
		// after: what it does more than a cadence after waking is not the pause's doing. (How much of
		// a finding it explains is what it froze of the finding: see explains.)
		return d, f.At, end + s.idx.fig.cadence(), true
	case f.Fault.Name == driftFault:
		if math.IsNaN(o.rate) || o.rate <= 0 {
			return history.Infinity, f.At, history.Infinity, true
		}
		b := idx.meta.Assumptions.DriftBound
		stretch := float64(ttl) * ((1-b)/o.rate - 1)
		return time.Duration(max(stretch, 0)), f.At, end + ttl, true
	}
	// A fault of the backend, or another declared outside: a write it lost lets its holder believe for
	// at most a TTL after the loss, which comes by the fault's end or the promotion it caused.
	last := end
	if p, ok := idx.promotionOf(f); ok {
		last = max(last, p)
	}
	return history.Infinity, f.At, last + ttl, true
}

// explains returns the outside faults that can explain a finding in [from, to] concerning insts that
// went excess past what the system promises (the part past the promise is [to−excess, to]): faults that
// hit one of insts (or the backend, or every instance), whose stretch meets [from, to], and whose
// magnitude (summed, for pauses of one instance) reaches excess less FailoverTolerance. A fault whose
// magnitude is not a length (a lost write: it lets its holder believe for up to a TTL after the loss)
// explains only a finding that lies inside its stretch: what went past the promise must have begun
// after the loss began (a holder already stale before it was not made stale by it) and ended by the
// stretch's end.
//
// A pause explains no more of the part past the promise than it froze of it: the time from when it took
// hold to its instance's wake, and the poll in flight it held, which goes out on waking (a poll's
// duration). Pauses of one instance add up only as far as they froze that part; time the instance ran
// in between is its own, its clock running (a pause that ended before the promise held back nothing the
// instance did after it).
func (s *scope) explains(from, to, excess time.Duration, insts ...string) []string {
	var out []string
	var total time.Duration
	var frozen []span
	past := span{to - max(excess, 0), to}
	for _, o := range s.outside {
		m, f, t, ok := s.reach(o, insts)
		if !ok || f > to || t < from {
			continue
		}
		if m == history.Infinity && (to-max(excess, 0) < f-FailoverTolerance || to > t+FailoverTolerance) {
			continue
		}
		if EffectOf(o.e.Fault) == EffectPaused {
			held := s.froze(o, insts, past)
			if len(held) == 0 && excess > 0 {
				continue
			}
			frozen = append(frozen, held...)
			out = append(out, o.label())
			continue
		}
		out = append(out, o.label())
		total = addSat(total, m)
	}
	for _, sp := range mergeSpans(frozen) {
		total = addSat(total, sp.to-sp.from)
	}
	if len(out) == 0 || addSat(total, FailoverTolerance) < excess {
		return nil
	}
	return out
}

// froze returns the parts of within that pause o froze of insts: from each freeze's hold to its wake
// and the poll in flight it held (a poll's duration).
func (s *scope) froze(o outsideFault, insts []string, within span) []span {
	var out []span
	end := s.idx.faultEnd(o.e)
	for _, t := range o.e.Fault.Targets {
		ie := s.ef.inst[t]
		if ie == nil || !slices.Contains(insts, t) {
			continue
		}
		for _, p := range ie.paused {
			if p.from < o.e.At || p.from > end {
				continue
			}
			sp := span{max(p.from, within.from), min(addSat(min(p.to, s.idx.end), s.idx.fig.pollDuration), within.to)}
			if sp.to > sp.from {
				out = append(out, sp)
			}
		}
	}
	return out
}

// touchedBy returns the outside faults that concern a finding in [from, to] about insts, whatever its
// size: the label a violation carries to say what went on around it.
func (s *scope) touchedBy(from, to time.Duration, insts ...string) []string {
	var out []string
	for _, o := range s.outside {
		if _, f, t, ok := s.reach(o, insts); ok && f <= to && t >= from {
			out = append(out, o.label())
		}
	}
	return out
}

// breaches describes the outside faults the history did not declare: the run went beyond the system's
// assumptions without saying so.
func (s *scope) breaches() []string {
	var out []string
	for _, o := range s.outside {
		if !o.declared {
			out = append(out, o.label()+": "+o.why)
		}
	}
	return out
}

// declared describes the outside faults the history declared.
func (s *scope) declared() []string {
	var out []string
	for _, o := range s.outside {
		if o.declared {
			out = append(out, o.label())
		}
	}
	return out
}
