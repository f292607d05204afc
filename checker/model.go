package checker

import "time"

// model is the history read as one model: the index of its events, the fault effects on every instance
// and on the backend, the lease record of every key, the confirmed leases, and the faults outside the
// system's assumptions with what each can explain. Every deadline and every allowance of the checker is
// a conclusion drawn from it (docs/checker.md).
type model struct {
	*index
	ef    *effects
	rec   *record
	ls    *leases
	scope *scope
	// beliefCache holds beliefsOf per endpoint (see believed).
	beliefCache map[string][]belief
	// clocks are the instances' clock rates inside the drift bound (clockRates).
	clocks map[string][]clockRate
}

func newModel(idx *index) *model {
	ef := newEffects(idx)
	return &model{index: idx, ef: ef, rec: newRecord(idx, ef), ls: newLeases(idx), scope: newScope(idx, ef), clocks: clockRates(idx)}
}

// nextPoll is when a holder that polled at t (the poll's start) owes its next poll: after the poll's
// duration, its poll interval counted on its own clock (a clock slow inside the drift bound waits
// longer in run time: the history records its rate), and FailoverTolerance. A timer set while the
// clock ran slow may keep the rate it was set at after the clock's rate changes back (a drifting
// clock converts a timer's duration when it is set), so the later of the two counts. Without a clock
// fault on in it is t + cadence.
func (m *model) nextPoll(in string, t time.Duration) time.Duration {
	armed := t + m.fig.pollDuration
	due := onClock(m.clocks[in], armed, m.fig.pollInterval)
	for _, c := range m.clocks[in] {
		if c.from <= armed && armed < c.to && c.rate < 1 {
			due = max(due, armed+time.Duration(float64(m.fig.pollInterval)/c.rate))
		}
	}
	return due + FailoverTolerance
}
