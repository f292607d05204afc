package checker

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// index is a history sorted into the views the invariants need. Event pointers point into the history's
// own slice; nothing is copied or modified.
type index struct {
	meta   history.Meta
	events []history.Event

	ops       []*history.Event
	polls     map[string][]*history.Event // per endpoint, in arrival order (At, then Seq)
	pollCount int
	refused   int
	faults    []*history.Event
	lifecycle []*history.Event
	beliefs   map[string][]*history.Event // per endpoint
	sessions  map[string][]*history.Event // per endpoint
	endpoints []string                    // every endpoint named anywhere, sorted
	instances []string                    // every instance named anywhere, sorted
	hasSessEv bool

	// end is the end of the run: Meta.Duration, or the latest time in the history if that is later.
	end time.Duration
	// live holds, per instance, the intervals in which it was part of the fleet.
	live map[string][]history.Window
	// active caches activeIntervals per endpoint.
	active map[string][]history.Window
	// byEp holds the operations per endpoint, in call order (built on first use, see opsOf).
	byEp map[string][]*history.Event
	// byInst holds the operations per instance, in call order.
	byInst map[string][]*history.Event
	// fig is the run's timing.
	fig figures
	// notes are the free-form markers, in time order (promotions among them).
	notes []*history.Event
}

func newIndex(h history.History) *index {
	idx := &index{
		meta:     h.Meta,
		events:   h.Events,
		polls:    map[string][]*history.Event{},
		beliefs:  map[string][]*history.Event{},
		sessions: map[string][]*history.Event{},
		active:   map[string][]history.Window{},
		end:      h.Meta.Duration,
		byInst:   map[string][]*history.Event{},
		fig:      figuresOf(h.Meta),
	}
	eps := map[string]bool{}
	insts := map[string]bool{}
	for i := range h.Events {
		e := &h.Events[i]
		if e.Endpoint != "" {
			eps[e.Endpoint] = true
		}
		if e.Instance != "" {
			insts[e.Instance] = true
		}
		idx.end = max(idx.end, e.At)
		// The run ends at its recorded duration, when the harness stopped the fleet: a call or a poll
		// still in flight then ends later, as the teardown cuts it, and does not extend the run.
		if e.End != history.Infinity && h.Meta.Duration == 0 {
			idx.end = max(idx.end, e.End)
		}
		switch e.Kind {
		case history.KindOp:
			if e.Op != nil {
				idx.ops = append(idx.ops, e)
				if e.Instance != "" {
					idx.byInst[e.Instance] = append(idx.byInst[e.Instance], e)
				}
			}
		case history.KindNote:
			idx.notes = append(idx.notes, e)
		case history.KindPoll:
			if e.Poll == nil || e.Endpoint == "" {
				continue
			}
			idx.polls[e.Endpoint] = append(idx.polls[e.Endpoint], e)
			idx.pollCount++
			if e.Poll.Outcome == history.PollRefused {
				idx.refused++
			}
		case history.KindFault:
			if e.Fault != nil {
				idx.faults = append(idx.faults, e)
				for _, t := range e.Fault.Targets {
					insts[t] = true
				}
			}
		case history.KindLifecycle:
			if e.Lifecycle != nil {
				idx.lifecycle = append(idx.lifecycle, e)
			}
		case history.KindBelief:
			if e.Belief != nil && e.Endpoint != "" {
				idx.beliefs[e.Endpoint] = append(idx.beliefs[e.Endpoint], e)
			}
		case history.KindSession:
			if e.Session != nil && e.Endpoint != "" {
				idx.sessions[e.Endpoint] = append(idx.sessions[e.Endpoint], e)
				idx.hasSessEv = true
			}
		}
	}
	for _, ps := range idx.polls {
		slices.SortStableFunc(ps, byArrival)
	}
	for _, bs := range idx.beliefs {
		slices.SortStableFunc(bs, byArrival)
	}
	for ep := range eps {
		idx.endpoints = append(idx.endpoints, ep)
	}
	sort.Strings(idx.endpoints)
	for in := range insts {
		idx.instances = append(idx.instances, in)
	}
	sort.Strings(idx.instances)
	for _, ops := range idx.byInst {
		slices.SortStableFunc(ops, byCall)
	}
	idx.live = liveIntervals(idx)
	return idx
}

func byCall(a, b *history.Event) int { return cmp.Compare(a.At, b.At) }

// opsOf returns the operations on endpoint ep, in call order.
func (idx *index) opsOf(ep string) []*history.Event {
	if idx.byEp == nil {
		idx.byEp = map[string][]*history.Event{}
		for _, e := range idx.ops {
			if e.Endpoint != "" {
				idx.byEp[e.Endpoint] = append(idx.byEp[e.Endpoint], e)
			}
		}
		for _, ops := range idx.byEp {
			slices.SortStableFunc(ops, byCall)
		}
	}
	return idx.byEp[ep]
}

// faultEnd is when fault event f ended: its End, its start for an instantaneous fault, and the end of
// the history for one that never ended.
func (idx *index) faultEnd(f *history.Event) time.Duration {
	if f.End == history.Infinity {
		return idx.end
	}
	return max(f.End, f.At)
}

// liveInst reports whether instance in was part of the fleet at t.
func (idx *index) liveInst(in string, t time.Duration) bool {
	for _, w := range idx.live[in] {
		if w.Contains(t) {
			return true
		}
	}
	return false
}

// fleetStart returns when the first instance started (its lifecycle "started" event), if one did.
func (idx *index) fleetStart() (time.Duration, bool) {
	for _, e := range idx.lifecycle {
		if e.Lifecycle.Change == history.LifeStarted {
			return e.At, true
		}
	}
	return 0, false
}

// lastReachedBy returns the last of polls (sorted by start) that began at or before t and reached the
// resource, or nil, and the index of the first poll that began after t.
func lastReachedBy(polls []*history.Event, t time.Duration) (*history.Event, int) {
	i := sort.Search(len(polls), func(i int) bool { return polls[i].At > t })
	for j := i - 1; j >= 0; j-- {
		if reached(polls[j]) {
			return polls[j], i
		}
	}
	return nil, i
}

func toSet(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// paramDur reads a duration parameter of a fault ("1500ms", "2s"); zero when absent or unreadable.
func paramDur(f *history.Fault, key string) time.Duration {
	d, err := time.ParseDuration(f.Params[key])
	if err != nil {
		return 0
	}
	return d
}

// round rounds a duration for messages: to the millisecond.
func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// percentile returns the p-th percentile (nearest rank) of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

// firstWord is a command's name, in lower case.
func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return strings.ToLower(w)
}

func byArrival(a, b *history.Event) int {
	if a.At != b.At {
		return cmp.Compare(a.At, b.At)
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// liveUntil returns the end of inst's membership of the fleet that contains t, or t when inst was not
// part of the fleet at t.
func (idx *index) liveUntil(inst string, t time.Duration) time.Duration {
	for _, w := range idx.live[inst] {
		if w.From <= t && t < w.To {
			return w.To
		}
	}
	return t
}

// pollEnd is a poll's end, or its start when the end was not recorded.
func pollEnd(e *history.Event) time.Duration {
	if e.End < e.At {
		return e.At
	}
	return e.End
}

// reached reports whether a poll reached the resource (anything but a fencing refusal).
func reached(e *history.Event) bool { return e.Poll.Outcome != history.PollRefused }

// liveIntervals derives each instance's membership of the fleet from lifecycle events and removing faults.
// An instance is live from its "started" event (or from 0 when its first event is not a start) until it
// stops or crashes, or until a fault that removes it begins. Pauses do not end membership.
func liveIntervals(idx *index) map[string][]history.Window {
	type change struct {
		at   time.Duration
		seq  int64
		up   bool
		inst string
	}
	var changes []change
	for _, e := range idx.lifecycle {
		switch e.Lifecycle.Change {
		case history.LifeStarted:
			changes = append(changes, change{e.At, e.Seq, true, e.Instance})
		case history.LifeStopped, history.LifeCrashed:
			changes = append(changes, change{e.At, e.Seq, false, e.Instance})
		}
	}
	// A fault that starts the instance it removes (an aborted start: started behind a cut link and
	// stopped before its start returned) removes it at its end: at its beginning the instance did not
	// exist yet, and reading the removal first would make it a member of the initial fleet.
	firstStart := map[string]time.Duration{}
	for _, e := range idx.lifecycle {
		if _, ok := firstStart[e.Instance]; !ok && e.Lifecycle.Change == history.LifeStarted {
			firstStart[e.Instance] = e.At
		}
	}
	for _, f := range idx.faults {
		if f.Fault.Removes {
			for _, t := range f.Fault.Targets {
				at := f.At
				if fs, ok := firstStart[t]; ok && fs >= f.At && f.End > f.At {
					at = f.End
				}
				changes = append(changes, change{at, f.Seq, false, t})
			}
		}
	}
	slices.SortStableFunc(changes, func(a, b change) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := map[string][]history.Window{}
	open := map[string]time.Duration{}
	seen := map[string]bool{}
	for _, c := range changes {
		if c.inst == "" {
			continue
		}
		from, isOpen := open[c.inst]
		switch {
		case c.up && !isOpen:
			open[c.inst] = c.at
		case !c.up && isOpen:
			out[c.inst] = append(out[c.inst], history.Window{From: from, To: c.at})
			delete(open, c.inst)
		case !c.up && !seen[c.inst]:
			// First news of the instance is its end: it was part of the initial fleet.
			out[c.inst] = append(out[c.inst], history.Window{From: 0, To: c.at})
		}
		seen[c.inst] = true
	}
	for in, from := range open {
		out[in] = append(out[in], history.Window{From: from, To: idx.end})
	}
	// Instances that appear only in polls, ops or beliefs were there all along.
	for _, in := range idx.instances {
		if !seen[in] {
			out[in] = []history.Window{{From: 0, To: idx.end}}
		}
	}
	return out
}

// liveAt returns the instances live at t, sorted.
func (idx *index) liveAt(t time.Duration) []string {
	var out []string
	for _, in := range idx.instances {
		for _, w := range idx.live[in] {
			if w.Contains(t) && (t < w.To || w.To == idx.end) {
				out = append(out, in)
				break
			}
		}
	}
	return out
}

// startedBefore returns the instances live at t that started before t: one that starts at t holds nothing
// yet, and no other instance can have counted it (balance samples a fleet at instants a scenario's join
// may share, as it does in virtual time).
func (idx *index) startedBefore(t time.Duration) []string {
	var out []string
	for _, in := range idx.liveAt(t) {
		for _, w := range idx.live[in] {
			if w.Contains(t) && w.From < t {
				out = append(out, in)
				break
			}
		}
	}
	return out
}

// activeIntervals returns the intervals in which endpoint ep was an active poll target. Without session
// events an endpoint is active for the whole run. An endpoint whose first session event is not "added"
// existed from the start.
func (idx *index) activeIntervals(ep string) []history.Window {
	if w, ok := idx.active[ep]; ok {
		return w
	}
	w := idx.computeActive(ep)
	idx.active[ep] = w
	return w
}

func (idx *index) computeActive(ep string) []history.Window {
	evs := idx.sessions[ep]
	if len(evs) == 0 {
		return []history.Window{{From: 0, To: idx.end}}
	}
	var out []history.Window
	active := evs[0].Session.Change != history.SessionAdded
	from := time.Duration(0)
	for _, e := range evs {
		switch e.Session.Change {
		case history.SessionAdded, history.SessionResumed:
			if !active {
				active, from = true, e.At
			}
		case history.SessionPaused, history.SessionRemoved:
			if active {
				out = append(out, history.Window{From: from, To: e.At})
				active = false
			}
		}
	}
	if active {
		out = append(out, history.Window{From: from, To: idx.end})
	}
	return out
}

// activeAt reports whether endpoint ep was an active poll target at t.
func (idx *index) activeAt(ep string, t time.Duration) bool {
	for _, w := range idx.activeIntervals(ep) {
		if w.Contains(t) {
			return true
		}
	}
	return false
}

// pollEndpoints returns the endpoints that are poll targets: those with polls or session events, and,
// when there are none of those, those named by operations. Beliefs and operations alone do not make an
// endpoint a target when polls exist, since election roles and heartbeats share the Endpoint field.
func (idx *index) pollEndpoints() []string {
	set := map[string]bool{}
	for ep := range idx.polls {
		set[ep] = true
	}
	for ep := range idx.sessions {
		set[ep] = true
	}
	if len(set) == 0 {
		for _, e := range idx.ops {
			if e.Endpoint != "" {
				set[e.Endpoint] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for ep := range set {
		out = append(out, ep)
	}
	sort.Strings(out)
	return out
}

func cmpDur(a, b time.Duration) int { return cmp.Compare(a, b) }
