package reports

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// maxCardsPerGroup is how many violations of one cause get a card with their zoom and excerpt; the
// others of the group are listed in a table.
const maxCardsPerGroup = 3

// MaxListedViolations is the checker's MaxViolations that WriteRun's callers should use: high enough that
// every violation of any realistic run is listed, so the timeline marks all of them (a density band where
// they are many) and the diagnosis counts and times them without guessing.
const MaxListedViolations = 5000

// diagGroup is the violations that share one likely cause: the mutual-exclusion findings of one offending
// instance, or the findings of one other invariant.
type diagGroup struct {
	id    string // anchor: "G1", "G2", ...
	title string // "i0…0442" or the invariant's name
	text  string // what happened and the likely cause, in a few sentences
	viols []int  // indices into m.viols, in time order
	extra int    // violations of the group's invariants counted but not listed (attributed when unambiguous)
}

// safetyInvariant reports whether inv judges mutual exclusion, where one instance is the offender.
func safetyInvariant(inv string) bool {
	switch inv {
	case checker.InvSingleHolder, checker.InvSinglePoller, checker.InvStalePoll, checker.InvValidity:
		return true
	}
	return false
}

// offender returns the instance a violation blames: the stale or unconfirmed poller for the resource
// invariants, the older believer for single-holder; -1 when it names none.
func (m *model) offender(v checker.Violation, inv string) int {
	if !safetyInvariant(inv) {
		return -1
	}
	idx := func(id string) int {
		if k, ok := m.instIdx[id]; ok {
			return k
		}
		return -1
	}
	if inv == checker.InvSingleHolder {
		ep, ok := m.epIdx[v.Endpoint]
		best, from := -1, time.Duration(1<<62)
		if ok {
			for _, s := range m.held[ep] {
				if s.from <= v.At && s.to >= v.At && s.from < from && slices.Contains(v.Instances, m.insts[s.inst].id) {
					best, from = s.inst, s.from
				}
			}
		}
		if best >= 0 {
			return best
		}
		if len(v.Instances) > 0 {
			return idx(v.Instances[0])
		}
		return -1
	}
	// The poll the violation is about starts at its time.
	for _, s := range v.Events {
		if i, ok := m.bySeq[s]; ok {
			if e := &m.ev[i]; e.Poll != nil && e.At == v.At && e.Instance != "" {
				return idx(e.Instance)
			}
		}
	}
	if len(v.Instances) > 0 {
		return idx(v.Instances[len(v.Instances)-1])
	}
	return -1
}

// buildDiagnosis groups the violations by likely cause and writes a few sentences for each group.
func (m *model) buildDiagnosis() {
	byKey := map[string]int{}
	for vi, v := range m.viols {
		key := "inv:" + v.invariant
		if v.off >= 0 {
			key = "inst:" + m.insts[v.off].id
		}
		g, ok := byKey[key]
		if !ok {
			g = len(m.diag)
			byKey[key] = g
			m.diag = append(m.diag, diagGroup{})
		}
		m.diag[g].viols = append(m.diag[g].viols, vi)
		m.viols[vi].group = g
	}
	// Truncated violations go to the one group of their invariant, when there is exactly one.
	for _, r := range m.rep.Results {
		if r.Truncated == 0 {
			continue
		}
		var gs []int
		for gi, g := range m.diag {
			for _, vi := range g.viols {
				if m.viols[vi].invariant == r.Invariant && !slices.Contains(gs, gi) {
					gs = append(gs, gi)
				}
			}
		}
		if len(gs) == 1 {
			m.diag[gs[0]].extra += r.Truncated
		}
	}
	for gi := range m.diag {
		g := &m.diag[gi]
		g.id = fmt.Sprintf("G%d", gi+1)
		slices.SortStableFunc(g.viols, func(a, b int) int { return int(m.viols[a].v.At - m.viols[b].v.At) })
		first := m.viols[g.viols[0]]
		if first.off >= 0 {
			g.title = m.insts[first.off].short
			g.text = m.offenderStory(first.off, g)
		} else {
			g.title = first.invariant
			if slices.Contains(m.expect.NotPromised, first.invariant) {
				g.title += ", not promised"
			}
			g.text = m.invariantStory(g)
		}
	}
}

// famFacts gathers the violations of one invariant within a group.
type famFacts struct {
	n           int
	eps, others map[string]bool
	first, last time.Duration
	lastEnd     time.Duration // for single-holder: when the last overlap ended
}

func (m *model) facts(g *diagGroup, inv string, off int) famFacts {
	f := famFacts{eps: map[string]bool{}, others: map[string]bool{}, first: -1}
	for _, vi := range g.viols {
		v := m.viols[vi]
		if v.invariant != inv {
			continue
		}
		f.n++
		if v.v.Endpoint != "" {
			f.eps[v.v.Endpoint] = true
		}
		for _, id := range v.v.Instances {
			if k, ok := m.instIdx[id]; ok && k != off {
				f.others[m.insts[k].short] = true
			}
		}
		if f.first < 0 || v.v.At < f.first {
			f.first = v.v.At
		}
		f.last = max(f.last, v.v.At)
		end := v.v.At
		if inv == checker.InvSingleHolder && v.ep >= 0 {
			end = m.overlapEnd(v)
		}
		f.lastEnd = max(f.lastEnd, end)
	}
	return f
}

// overlapEnd returns when the two beliefs a single-holder violation names stopped overlapping.
func (m *model) overlapEnd(v violInfo) time.Duration {
	end := m.dur
	for _, id := range v.v.Instances {
		k, ok := m.instIdx[id]
		if !ok {
			continue
		}
		for _, s := range m.held[v.ep] {
			if s.inst == k && s.from <= v.v.At && s.to >= v.v.At {
				end = min(end, s.to)
			}
		}
	}
	return end
}

// epsText names a set of endpoints: "ep-3", "3 endpoints (ep-0, ep-4, ep-7)", "9 endpoints (ep-0 … ep-8)".
func (m *model) epsText(eps map[string]bool) string {
	names := sortedNatural(eps)
	switch {
	case len(names) == 0:
		return "no endpoint"
	case len(names) == 1:
		return m.epWord() + " " + names[0]
	case len(names) <= 3:
		return fmt.Sprintf("%d %ss (%s)", len(names), m.epWord(), strings.Join(names, ", "))
	default:
		return fmt.Sprintf("%d %ss (%s … %s)", len(names), m.epWord(), names[0], names[len(names)-1])
	}
}

// epWord is what the run calls an endpoint: a role in an election.
func (m *model) epWord() string {
	if m.election() {
		return "role"
	}
	return "endpoint"
}

// election reports whether the run elected leaders rather than sharing leases.
func (m *model) election() bool { return m.meta.Kind == "election" }

// whenText says when a run of violations happened, rounded for people: "at 3.2s", "from 9.64s to 12.6s",
// "from 9.17s to the end of the run".
func (m *model) whenText(first, last time.Duration) string {
	nearEnd := max(2*m.meta.PollInterval, m.dur/50)
	switch {
	case last >= m.dur-nearEnd:
		return "from " + fmtDur(first) + " to the end of the run"
	case last-first < 10*time.Millisecond:
		return "at " + fmtDur(first)
	default:
		return "from " + fmtDur(first) + " to " + fmtDur(last)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func setText(s map[string]bool) string { return strings.Join(sortedNatural(s), ", ") }

// andList joins names for a sentence: "a", "a and b", "a, b and c".
func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return "–"
	case 1:
		return xs[0]
	default:
		return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
	}
}

// offenderStory tells what one instance did wrong and why, from the history. The group's title names
// the instance, so the text refers to it as "it".
func (m *model) offenderStory(off int, g *diagGroup) string {
	sh := m.facts(g, checker.InvSingleHolder, off)
	sp := m.facts(g, checker.InvSinglePoller, off)
	st := m.facts(g, checker.InvStalePoll, off)
	va := m.facts(g, checker.InvValidity, off)
	acts, poll, polls := "polling", "poll", "polls"
	if m.election() {
		acts, poll, polls = "acting as leader for", "action", "actions"
	}
	var what []string
	named := map[string]bool{} // endpoint sets already named: later clauses say "them"
	epRef := func(eps map[string]bool) string {
		k := setText(eps)
		if named[k] {
			return "them"
		}
		named[k] = true
		return m.epsText(eps)
	}
	if sp.n > 0 {
		took := ""
		if len(sp.others) > 0 {
			took = " after " + andList(sortedNatural(sp.others)) + " took over"
		}
		what = append(what, fmt.Sprintf("kept %s %s%s: %s %s", acts, epRef(sp.eps), took, plural(sp.n, poll, polls), m.whenText(sp.first, sp.last)))
	}
	if sh.n > 0 {
		others := sortedNatural(sh.others)
		switch {
		case m.election():
			what = append(what, fmt.Sprintf("it and %s were two leaders acting for %s %s", andList(others), epRef(sh.eps), m.whenText(sh.first, sh.lastEnd)))
		case len(others) == 1:
			what = append(what, fmt.Sprintf("it and %s both believed they held %s %s", others[0], epRef(sh.eps), m.whenText(sh.first, sh.lastEnd)))
		default:
			what = append(what, fmt.Sprintf("it believed it held %s while %s did too, %s", epRef(sh.eps), andList(others), m.whenText(sh.first, sh.lastEnd)))
		}
	}
	if st.n > 0 {
		what = append(what, fmt.Sprintf("%d of its %s on %s arrived with a stale token %s", st.n, polls, epRef(st.eps), m.whenText(st.first, st.last)))
	}
	if va.n > 0 {
		on := epRef(va.eps)
		if on == "them" {
			what = append(what, fmt.Sprintf("%d of its %s lay outside its confirmed lease, %s", va.n, polls, m.whenText(va.first, va.last)))
		} else {
			what = append(what, fmt.Sprintf("%d of its %s on %s lay outside its confirmed lease, %s", va.n, polls, on, m.whenText(va.first, va.last)))
		}
	}
	s := strings.Join(what, "; ")
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	if g.extra > 0 {
		s += fmt.Sprintf(" (and %d more violations counted but not listed)", g.extra)
	}
	s += "."
	first := sh.first
	for _, f := range []famFacts{sp, st} {
		if f.n > 0 && (first < 0 || f.first < first) {
			first = f.first
		}
	}
	vfirst := time.Duration(-1)
	if va.n > 0 {
		vfirst = va.first
	}
	if c := m.causes(off, g, first, vfirst); len(c) > 0 {
		s += " Likely cause: " + strings.Join(c, "; ") + "."
	}
	return s
}

// causes reads the history for why instance off acted without a valid lease: a fault that hit it shortly
// before, its failing backend calls, whether it stopped (and whether it has a local deadline at all),
// whether its polls went past its own deadline or its key was removed while its lease was valid, and
// whether its renewals confirm anything. first is its first mutual-exclusion violation (-1 if none:
// validity only), vfirst its first poll outside its lease (-1 if none).
func (m *model) causes(off int, g *diagGroup, first, vfirst time.Duration) []string {
	id := m.insts[off].id
	validity := vfirst >= 0
	var out []string
	limit := first
	if limit < 0 {
		limit = m.dur
		if validity {
			limit = vfirst
		}
	}
	ttl := m.meta.LeaseTTL
	if ttl <= 0 {
		ttl = m.dur
	}
	// A fault that hit it and lasted into the TTL before its first violation.
	var hit *faultInfo
	for i := range m.faults {
		f := &m.faults[i]
		if f.at > limit || f.end < limit-ttl {
			continue
		}
		if len(f.targets) == 0 || slices.Contains(f.targets, id) {
			hit = f
			out = append(out, fmt.Sprintf("%s %s hit it %s", f.id, f.name, m.spanText(f.at, f.end)))
			break
		}
	}
	// Its first failing backend call since the fault began (without a fault: in the TTL before).
	from := max(limit-ttl, 0)
	if hit != nil {
		from = hit.at
	}
	for i := range m.ev {
		e := &m.ev[i]
		if e.At < from || e.Instance != id || e.Op == nil || (e.Op.Err == "" && !e.Op.Unknown) {
			continue
		}
		if e.At > limit {
			break
		}
		why := ""
		if e.Op.Err != "" {
			why = " (" + oneLine(e.Op.Err, 60) + ")"
		}
		out = append(out, fmt.Sprintf("its backend calls failed from %s%s", fmtDur(e.At), why))
		break
	}
	// Whether it reports deadlines, when its belief ended, whether it was paused.
	eps := map[int]bool{}
	for _, vi := range g.viols {
		if v := m.viols[vi]; v.ep >= 0 {
			eps[v.ep] = true
		}
	}
	hasDeadline, paused := false, false
	ended := time.Duration(-1)
	for i := range m.ev {
		e := &m.ev[i]
		if e.Instance != id {
			continue
		}
		switch {
		case e.Belief != nil && e.Belief.Held:
			hasDeadline = hasDeadline || e.Belief.Deadline > 0
		case e.Belief != nil && !e.Belief.Held && first >= 0 && e.At >= first && ended < 0 && eps[m.epIdx[e.Endpoint]]:
			ended = e.At
		case e.Lifecycle != nil && e.Lifecycle.Change == history.LifePaused && e.At <= limit && e.At >= from:
			paused = true
		}
	}
	switch {
	case paused:
		s := "it was paused, and a process frozen between its check and its action can only be stopped by fencing"
		if m.unfenced(id) {
			s += ", which it does not use (its polls carry no token)"
		}
		out = append(out, s)
		if first >= 0 && !hasDeadline && ended >= 0 {
			out = append(out, "it reports no local deadline, so once awake it went on until it learned of the loss at "+fmtDur(ended))
		}
	case first >= 0 && !hasDeadline && ended >= 0:
		out = append(out, "it reports no local deadline, so it went on until it learned of the loss at "+fmtDur(ended))
		if why := m.keyLost(off, eps, limit, ttl); why != "" {
			out = append(out, why)
		}
	case first >= 0 && !hasDeadline:
		out = append(out, "it did not stop (it reports no local deadline)")
	case validity && !hasDeadline:
		out = append(out, "it reports no local deadline, so nothing stopped it when its lease lapsed")
	case first >= 0:
		if past, n := m.pastDeadline(off, g); past > 0 {
			out = append(out, fmt.Sprintf("%d of its %d polls here came after its own local deadline", past, n))
		} else if why := m.keyLost(off, eps, limit, ttl); why != "" {
			out = append(out, why)
		} else {
			out = append(out, "its own deadline had not passed: the lease changed hands while it still believed in it")
		}
	}
	if validity {
		unconditional := false
		for i := range m.ev {
			if e := &m.ev[i]; e.Instance == id && e.Op != nil && e.Op.Kind == history.OpRenew && e.Op.Owner == history.AnyOwner {
				unconditional = true
				break
			}
		}
		if unconditional {
			out = append(out, "its renewals are unconditional (they name no holder), so none confirms a lease it had already lost")
		}
	}
	return out
}

// unfenced reports whether instance id polled, always without a fencing token.
func (m *model) unfenced(id string) bool {
	polled := false
	for i := range m.ev {
		if e := &m.ev[i]; e.Instance == id && e.Poll != nil {
			if e.Poll.Token != 0 {
				return false
			}
			polled = true
		}
	}
	return polled
}

// pastDeadline counts the group's polls by instance off that came after the local deadline its latest
// belief in that endpoint reported, and the polls it judged.
func (m *model) pastDeadline(off int, g *diagGroup) (past, n int) {
	id := m.insts[off].id
	for _, vi := range g.viols {
		v := m.viols[vi]
		if v.ep < 0 || v.invariant == checker.InvSingleHolder {
			continue
		}
		n++
		var deadline time.Duration
		for _, i := range m.epEvents[v.ep] {
			e := &m.ev[i]
			if e.At > v.v.At {
				break
			}
			if e.Instance == id && e.Belief != nil && e.Belief.Held {
				deadline = e.Belief.Deadline
			}
		}
		if deadline > 0 && v.v.At > deadline {
			past++
		}
	}
	return past, n
}

// keyLost looks for what removed instance off's keys while its lease was valid, in the two TTLs before
// limit: a release of one of its endpoints' keys (its own late release, or another's), or a fault that
// wiped the backend.
func (m *model) keyLost(off int, eps map[int]bool, limit, ttl time.Duration) string {
	id := m.insts[off].id
	for i := len(m.ev) - 1; i >= 0; i-- {
		e := &m.ev[i]
		if e.At > limit {
			continue
		}
		if e.At < limit-2*ttl {
			break
		}
		if e.Op != nil && e.Op.Kind == history.OpRelease && e.Endpoint != "" && eps[m.epIdx[e.Endpoint]] {
			who := "its own release"
			if e.Instance != id {
				who = "a release by " + m.shortOf(e.Instance)
			}
			if e.Op.Owner == history.AnyOwner {
				who += " (unconditional: it does not check whose key it deletes)"
			}
			if e.Op.OK && !e.Op.Unknown {
				return fmt.Sprintf("%s of %s at %s removed the key while its lease was still valid", who, e.Endpoint, fmtDur(e.At))
			}
			return fmt.Sprintf("%s of %s, sent at %s, could land late and remove the key while its lease was still valid", who, e.Endpoint, fmtDur(e.At))
		}
	}
	for _, f := range m.faults {
		if f.wipes && f.at <= limit && f.at >= limit-2*ttl {
			return fmt.Sprintf("%s %s at %s wiped the backend while its lease was still valid", f.id, f.name, fmtDur(f.at))
		}
	}
	return ""
}

// shortOf is an instance's short name, or the ID itself when unknown.
func (m *model) shortOf(id string) string {
	if k, ok := m.instIdx[id]; ok {
		return m.insts[k].short
	}
	return id
}

// spanText is a window rounded for people: "from 6.11s to 11.1s", "from 6.11s on".
func (m *model) spanText(from, to time.Duration) string {
	if to <= from || to >= m.dur {
		return "from " + fmtDur(from) + " on"
	}
	return "from " + fmtDur(from) + " to " + fmtDur(to)
}

// invariantStory summarises the violations of an invariant that blames no single instance.
func (m *model) invariantStory(g *diagGroup) string {
	first := m.viols[g.viols[0]]
	n := len(g.viols) + g.extra
	s := m.humanize(first.v.Message)
	if n > 1 {
		s = fmt.Sprintf("%s %s; the first: %s", plural(n, "violation", "violations"),
			m.whenText(first.v.At, m.viols[g.viols[len(g.viols)-1]].v.At), s)
	}
	return strings.TrimSuffix(s, ".") + "."
}

// durRE matches the Go duration texts checker messages carry ("3.47748643s", "26.159579ms").
var durRE = regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+(?:\.\d+)?(?:ns|µs|us|ms|s)\b`)

// humanize rounds the durations in a message for people and abbreviates instance IDs to the short names
// the timeline uses.
func (m *model) humanize(s string) string { return roundDurations(m.shortenIDs(s)) }

// shortenIDs abbreviates instance IDs to the short names the timeline uses.
func (m *model) shortenIDs(s string) string {
	for _, in := range m.insts {
		if in.short != in.id {
			s = strings.ReplaceAll(s, in.id, in.short)
		}
	}
	return s
}

// roundDurationsTo rounds the Go duration texts in s to a multiple of unit.
func roundDurationsTo(s string, unit time.Duration) string {
	return durRE.ReplaceAllStringFunc(s, func(t string) string {
		d, err := time.ParseDuration(t)
		if err != nil {
			return t
		}
		return d.Round(unit).String()
	})
}

// roundDurations rounds the Go duration texts in s ("2.585715982s" becomes "2.59s").
func roundDurations(s string) string {
	return durRE.ReplaceAllStringFunc(s, func(t string) string {
		d, err := time.ParseDuration(t)
		if err != nil {
			return t
		}
		return fmtDur(d)
	})
}
