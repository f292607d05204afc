package reports

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// model is a run digested for drawing: events indexed by endpoint and instance, holdings as intervals,
// violations numbered, failovers grouped by fault. Building it is linear in the history (plus sorting).
type model struct {
	meta   history.Meta
	rep    checker.Report
	passed bool
	// inconclusive: the run did not pass only because timing findings coincided with harness lag.
	inconclusive bool
	expected     []string
	expect       Expect
	dur          time.Duration // the drawn run length

	ev    []history.Event
	bySeq map[int64]int

	insts   []instInfo
	instIdx map[string]int

	eps      []string
	epIdx    map[string]int
	epEvents [][]int32 // per endpoint: indices into ev, in time order
	held     [][]span  // per endpoint: holding intervals
	derived  bool      // some holdings were derived from polls (no belief events)

	faults []faultInfo
	// promotions are the replica promotions of a replicated backend (history.NotePromotion notes).
	promotions []promotionInfo
	// unplaced are the recorder's notes of writes it could not model (history.NoteUnplacedKey).
	unplaced []string
	results  []resultView
	viols    []violInfo
	caught   []violInfo // safe findings: caught outside the system's assumptions
	inconc   []violInfo // timing findings the harness's own lag can account for
	groups   []foGroup
	diag     []diagGroup // violations grouped by likely cause
}

// span is an interval during which instance inst held (believed it held) an endpoint.
type span struct {
	inst     int
	from, to time.Duration
	token    uint64 // the holding's fencing token (an election's term), 0 when unknown
}

// instInfo is one instance of the fleet.
type instInfo struct {
	id, short, color string
	life             []lifeSpan
	marks            []lifeMark
	landed           []int32 // its operations whose commands landed late (history.Op.Landed): indices into ev
}

// lifeSpan is an interval in which an instance ran (or was frozen, when paused).
type lifeSpan struct {
	from, to time.Duration
	paused   bool
}

// lifeMark is a crash or stop.
type lifeMark struct {
	at     time.Duration
	change history.LifecycleChange
}

// faultInfo is one fault window.
type faultInfo struct {
	id, name string
	targets  []string
	params   string
	at, end  time.Duration
	removes  bool
	wipes    bool
}

// label is the fault's short caption ("f2 partition inst7…2441"), naming targets by their short names.
func (f faultInfo) label(m *model) string {
	s := f.id + " " + f.name
	var ts []string
	for _, t := range f.targets {
		if k, ok := m.instIdx[t]; ok {
			t = m.insts[k].short
		}
		ts = append(ts, t)
	}
	switch {
	case len(ts) > 2:
		s += fmt.Sprintf(" %s +%d", ts[0], len(ts)-1)
	case len(ts) > 0:
		s += " " + strings.Join(ts, ",")
	}
	return s
}

// resultView is one invariant's result with its status.
type resultView struct {
	res checker.Result
	st  status
}

// violInfo is a numbered violation (V1, V2, ...).
type violInfo struct {
	n         int
	invariant string
	st        status
	v         checker.Violation
	ep        int // endpoint index, -1 when the violation concerns no known endpoint
	off       int // the instance it blames (see offender), -1 for none
	group     int // index into model.diag (violations only)
}

// id is the violation's anchor and caption; caught findings are C1, C2, ...
func (v violInfo) id() string {
	if v.st == stCaught {
		return fmt.Sprintf("C%d", v.n)
	}
	if v.st == stInconclusive {
		return fmt.Sprintf("I%d", v.n)
	}
	return fmt.Sprintf("V%d", v.n)
}

// buildModel digests a run.
func buildModel(r Run) *model {
	m := &model{
		meta:     r.History.Meta,
		rep:      r.Report,
		passed:   r.Passed,
		expected: r.expected(),
		expect:   r.expect(),
		// Judged again here rather than passed in: Run.Passed is the caller's, the rest follows from it.
		inconclusive: !r.Passed && Inconclusive(r.Report, r.expect()),
		ev:           r.History.Events,
		instIdx:      map[string]int{},
		epIdx:        map[string]int{},
	}
	if !sort.SliceIsSorted(m.ev, func(i, j int) bool { return m.ev[i].At < m.ev[j].At }) {
		m.ev = slices.Clone(m.ev)
		history.Sort(m.ev)
	}
	m.bySeq = make(map[int64]int, len(m.ev))
	m.dur = m.meta.Duration
	for i := range m.ev {
		e := &m.ev[i]
		m.bySeq[e.Seq] = i
		m.dur = max(m.dur, e.At)
		if e.End != history.Infinity {
			m.dur = max(m.dur, e.End)
		}
	}
	if m.dur <= 0 {
		m.dur = time.Second
	}
	m.collectNames()
	m.indexEndpoints()
	m.buildLifecycles()
	m.buildHoldings()
	m.buildFaults()
	m.buildResults()
	m.buildFailoverGroups()
	m.buildDiagnosis()
	return m
}

// collectNames finds every instance and endpoint, in natural order.
func (m *model) collectNames() {
	insts, eps := map[string]bool{}, map[string]bool{}
	for i := range m.ev {
		e := &m.ev[i]
		if e.Instance != "" {
			insts[e.Instance] = true
		}
		if e.Fault != nil {
			for _, t := range e.Fault.Targets {
				insts[t] = true
			}
		}
		if e.Endpoint != "" {
			eps[e.Endpoint] = true
		}
	}
	for _, b := range m.rep.Balance {
		for id := range b.PerInst {
			insts[id] = true
		}
	}
	for _, f := range m.rep.Failovers {
		for _, id := range []string{f.From, f.To} {
			if id != "" {
				insts[id] = true
			}
		}
	}
	ids := sortedNatural(insts)
	shorts := shortNames(ids)
	for i, id := range ids {
		m.instIdx[id] = i
		m.insts = append(m.insts, instInfo{id: id, short: shorts[i], color: instanceColor(i)})
	}
	m.eps = sortedNatural(eps)
	for i, ep := range m.eps {
		m.epIdx[ep] = i
	}
}

// indexEndpoints lists each endpoint's events, and each instance's operations that landed late.
func (m *model) indexEndpoints() {
	m.epEvents = make([][]int32, len(m.eps))
	for i := range m.ev {
		e := &m.ev[i]
		if ep := e.Endpoint; ep != "" {
			k := m.epIdx[ep]
			m.epEvents[k] = append(m.epEvents[k], int32(i))
		}
		if e.Op != nil && e.Op.Landed > 0 && e.Instance != "" {
			k := m.instIdx[e.Instance]
			m.insts[k].landed = append(m.insts[k].landed, int32(i))
		}
	}
}

// buildLifecycles turns lifecycle events into running and paused intervals per instance. An instance is
// taken to run from the start of the run unless its first lifecycle event is a start.
func (m *model) buildLifecycles() {
	type state struct {
		seen    bool
		up      bool
		paused  bool
		since   time.Duration
		started bool
	}
	st := make([]state, len(m.insts))
	for i := range st {
		st[i] = state{up: true}
	}
	closeSpan := func(k int, at time.Duration) {
		s := &st[k]
		if s.up && at > s.since {
			m.insts[k].life = append(m.insts[k].life, lifeSpan{from: s.since, to: at, paused: s.paused})
		}
		s.since = at
	}
	for i := range m.ev {
		e := &m.ev[i]
		if e.Lifecycle == nil || e.Instance == "" {
			continue
		}
		k := m.instIdx[e.Instance]
		s := &st[k]
		if !s.seen {
			s.seen = true
			if e.Lifecycle.Change == history.LifeStarted {
				s.up = false
			}
		}
		switch e.Lifecycle.Change {
		case history.LifeStarted:
			closeSpan(k, e.At)
			s.up, s.paused = true, false
		case history.LifePaused:
			closeSpan(k, e.At)
			s.paused = true
		case history.LifeResumed:
			closeSpan(k, e.At)
			s.paused = false
		case history.LifeCrashed, history.LifeStopped:
			closeSpan(k, e.At)
			s.up, s.paused = false, false
			m.insts[k].marks = append(m.insts[k].marks, lifeMark{at: e.At, change: e.Lifecycle.Change})
		}
	}
	for k := range st {
		closeSpan(k, m.dur)
	}
}

// buildHoldings turns belief events into holding intervals. A crash or stop ends the instance's beliefs.
// For an endpoint without any belief event, holdings are derived from polls: consecutive polls by one
// instance no further apart than two poll intervals form one holding.
func (m *model) buildHoldings() {
	m.held = make([][]span, len(m.eps))
	type key struct{ ep, inst int }
	open := map[key]time.Duration{}
	tok := map[key]uint64{}
	hasBelief := make([]bool, len(m.eps))
	closeAll := func(inst int, at time.Duration) {
		for k, from := range open {
			if k.inst == inst {
				m.held[k.ep] = append(m.held[k.ep], span{inst: inst, from: from, to: at, token: tok[k]})
				delete(open, k)
			}
		}
	}
	for i := range m.ev {
		e := &m.ev[i]
		switch {
		case e.Belief != nil && e.Endpoint != "" && e.Instance != "":
			k := key{m.epIdx[e.Endpoint], m.instIdx[e.Instance]}
			hasBelief[k.ep] = true
			from, isOpen := open[k]
			if e.Belief.Held && !isOpen {
				open[k], tok[k] = e.At, e.Belief.Token
			} else if !e.Belief.Held && isOpen {
				m.held[k.ep] = append(m.held[k.ep], span{inst: k.inst, from: from, to: e.At, token: tok[k]})
				delete(open, k)
			}
		case e.Lifecycle != nil && e.Instance != "" &&
			(e.Lifecycle.Change == history.LifeCrashed || e.Lifecycle.Change == history.LifeStopped):
			closeAll(m.instIdx[e.Instance], e.At)
		}
	}
	for k, from := range open {
		m.held[k.ep] = append(m.held[k.ep], span{inst: k.inst, from: from, to: m.dur, token: tok[k]})
	}
	gap := 2 * m.meta.PollInterval
	if gap <= 0 {
		gap = m.dur / 100
	}
	for ep := range m.eps {
		if !hasBelief[ep] {
			m.held[ep] = m.derivedHoldings(ep, gap)
			if len(m.held[ep]) > 0 {
				m.derived = true
			}
		}
		slices.SortFunc(m.held[ep], func(a, b span) int {
			if a.from != b.from {
				return cmp.Compare(a.from, b.from)
			}
			return cmp.Compare(a.inst, b.inst)
		})
	}
}

// derivedHoldings builds holdings of endpoint ep from its polls.
func (m *model) derivedHoldings(ep int, gap time.Duration) []span {
	last := map[int]int{} // instance -> index in out of its latest span
	var out []span
	for _, i := range m.epEvents[ep] {
		e := &m.ev[i]
		if e.Poll == nil || e.Instance == "" || e.Poll.Outcome == history.PollRefused {
			continue
		}
		inst := m.instIdx[e.Instance]
		end := m.end(e)
		if j, ok := last[inst]; ok && e.At-out[j].to <= gap {
			out[j].to = max(out[j].to, end)
			continue
		}
		last[inst] = len(out)
		out = append(out, span{inst: inst, from: e.At, to: end})
	}
	return out
}

// end returns an event's end for drawing: At for instantaneous events, the run's end for unknown ones.
func (m *model) end(e *history.Event) time.Duration {
	switch {
	case e.End == history.Infinity:
		return m.dur
	case e.End < e.At:
		return e.At
	default:
		return e.End
	}
}

// promotionInfo is a replica's promotion to primary: when, and "redis-0 -> redis-1".
type promotionInfo struct {
	at   time.Duration
	what string
}

// buildFaults collects fault windows, and the promotions drawn beside them.
func (m *model) buildFaults() {
	for i := range m.ev {
		e := &m.ev[i]
		if e.Kind == history.KindNote && strings.HasPrefix(e.Note, history.NotePromotion) {
			m.promotions = append(m.promotions, promotionInfo{at: e.At, what: strings.TrimPrefix(e.Note, history.NotePromotion)})
		}
		if e.Kind == history.KindNote && strings.HasPrefix(e.Note, history.NoteUnplacedKey) {
			m.unplaced = append(m.unplaced, strings.TrimPrefix(e.Note, history.NoteUnplacedKey))
		}
		if e.Fault == nil {
			continue
		}
		id := e.Fault.ID
		if id == "" {
			id = fmt.Sprintf("#%d", e.Seq)
		}
		m.faults = append(m.faults, faultInfo{
			id: id, name: e.Fault.Name, targets: e.Fault.Targets, params: faultParams(e.Fault.Params),
			at: e.At, end: m.end(e), removes: e.Fault.Removes, wipes: e.Fault.Wipes,
		})
	}
}

// buildResults applies expectations and numbers the violations and, apart, the caught findings.
func (m *model) buildResults() {
	m.rep.Results = slices.Clone(m.rep.Results) // the caller's report is left as it is
	for i, res := range m.rep.Results {
		res = legacyRefusals(res)
		m.rep.Results[i] = res
		st := statusOf(res, m.expect)
		m.results = append(m.results, resultView{res: res, st: st})
		for _, v := range res.Violations {
			m.viols = append(m.viols, violInfo{n: len(m.viols) + 1, invariant: res.Invariant, st: st, v: v, ep: m.epOf(v),
				off: m.offender(v, res.Invariant)})
		}
		for _, v := range res.Caught {
			m.caught = append(m.caught, violInfo{n: len(m.caught) + 1, invariant: res.Invariant, st: stCaught, v: v, ep: m.epOf(v),
				off: m.offender(v, res.Invariant)})
		}
		for _, v := range res.Inconclusive {
			m.inconc = append(m.inconc, violInfo{n: len(m.inconc) + 1, invariant: res.Invariant, st: stInconclusive, v: v, ep: m.epOf(v),
				off: m.offender(v, res.Invariant)})
		}
	}
}

func (m *model) epOf(v checker.Violation) int {
	if ep, ok := m.epIdx[v.Endpoint]; ok {
		return ep
	}
	return -1
}

// legacyRefusals moves the refused polls a single-poller result of an older result.json listed among
// its violations (ReachedResource false) to its caught findings, as they were judged safe then.
func legacyRefusals(res checker.Result) checker.Result {
	if res.Invariant != checker.InvSinglePoller || len(res.Breaches()) == len(res.Violations) {
		return res
	}
	var keep []checker.Violation
	for _, v := range res.Violations {
		if v.ReachedResource {
			keep = append(keep, v)
		} else {
			res.Caught = append(res.Caught, v)
		}
	}
	res.Violations = keep
	return res
}

// truncated counts violations the checker did not list.
func (m *model) truncated() int {
	n := 0
	for _, r := range m.rep.Results {
		n += r.Truncated
	}
	return n
}

// caughtCount counts every caught finding, listed or not.
func (m *model) caughtCount() int {
	n := 0
	for _, r := range m.rep.Results {
		n += r.CaughtCount()
	}
	return n
}

// faultParams formats a fault's parameters in key order: "direction=replies latency=200ms".
func faultParams(p map[string]string) string {
	ps := make([]string, 0, len(p))
	for k, v := range p {
		ps = append(ps, k+"="+v)
	}
	slices.Sort(ps)
	return strings.Join(ps, " ")
}
