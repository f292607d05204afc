package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

//go:embed report.tmpl
var reportTmplText string

//go:embed style.css
var styleCSS string

var reportTmpl = template.Must(template.New("report").Parse(reportTmplText))

// kv is one labelled value.
type kv struct{ K, V string }

type legendItem struct {
	ID, Short string
	Color     template.CSS
}

type resultRow struct {
	Invariant, Status, Class, Message string
	Violations, Truncated, Caught     int
	Took                              string
}

type groupRow struct {
	FaultID, Fault, Targets, At   string
	Affected, Polled, Over, Never int
	P50, P99, Max, Bound, Class   string
}

type foRow struct {
	FaultID, Fault, Endpoint, From, To, FaultAt, PolledAt, Latency, Bound, Class string
}

type faultRow struct{ ID, Name, Targets, From, To, Params string }

type violView struct {
	ID, Invariant, Status, Class, At, Endpoint, Instances, Message, Reached, Outside, Lag string
	Zoom                                                                                  template.HTML
	Rows                                                                                  []excerptRow
	Excerpted                                                                             bool
}

type fileLink struct{ Name, What string }

// diagView is one cause in the diagnosis.
type diagView struct{ ID, Title, Count, Text string }

// violGroupView is the violations of one cause: a few cards, the rest as table rows.
type violGroupView struct {
	ID, Title, Count, Text string
	Cards, Rest            []violView
}

// runPage is everything report.tmpl shows.
type runPage struct {
	CSS                                                     template.CSS
	Scenario, Suite, System, Verdict, VerdictClass, Command string
	Interrupted, LinOK, Compact                             bool
	Params                                                  []kv
	Results                                                 []resultRow
	Legend                                                  []legendItem
	Faults                                                  []faultRow
	Overview, Detail, Balance, Ops                          template.HTML
	DetailNote, TimelineNote, FailoverHeadline, BalanceNote string
	HeadlineClass                                           string
	Outside                                                 []string
	Unplaced                                                []string
	ExpectedNote                                            string
	Groups                                                  []groupRow
	Failovers                                               []foRow
	Sub, EpWord, FaultsLabel, Headline                      string
	Election                                                bool
	Diagnosis                                               []diagView
	Violations                                              []violGroupView
	Caught                                                  []violView
	Inconclusive                                            []violView
	HasLag                                                  bool
	Truncated, CaughtTotal, RefusedStale, CardsPerGroup     int
	ViolationTotal                                          int
	Files                                                   []fileLink
}

// renderRunHTML writes report.html.
func renderRunHTML(w io.Writer, m *model, linOK bool) error {
	p := runPage{
		CSS:      template.CSS(styleCSS),
		Scenario: m.meta.Scenario, Suite: m.meta.Suite, System: m.meta.System,
		Command: m.meta.Command, Interrupted: m.meta.Interrupted, LinOK: linOK,
		Params: params(m), Truncated: m.truncated(), CaughtTotal: m.caughtCount(), RefusedStale: m.rep.Refused,
		Sub: subline(m), EpWord: m.epWord(), FaultsLabel: plural(len(m.faults), "fault", "faults"), Election: m.election(), CardsPerGroup: maxCardsPerGroup, ViolationTotal: len(m.viols) + m.truncated(),
	}
	if len(m.expected) > 0 {
		p.ExpectedNote = "expected to violate " + strings.Join(m.expected, ", ")
	}
	v := m.verdict()
	p.Verdict, p.VerdictClass = v.Word, v.Class
	p.HeadlineClass = "warn"
	switch v.Class {
	case "interrupted":
		p.Headline = interruptedHeadline(m)
	case "pass":
		p.Headline, p.HeadlineClass = passHeadline(m), "okline"
	case "inconclusive":
		p.Headline = inconclusiveHeadline(m)
	}
	p.Outside = m.outsideBanner()
	p.Unplaced = m.unplaced
	p.HasLag = m.meta.Lag != nil
	for _, r := range m.results {
		p.Results = append(p.Results, resultRow{
			Invariant: r.res.Invariant, Status: r.st.label(), Class: r.st.class(), Message: m.humanize(r.res.Message),
			Violations: len(r.res.Violations) + r.res.Truncated, Truncated: r.res.Truncated, Caught: r.res.CaughtCount(),
			Took: fmtDur(r.res.Duration),
		})
	}
	for _, in := range m.insts {
		p.Legend = append(p.Legend, legendItem{ID: in.id, Short: in.short, Color: template.CSS(in.color)})
	}
	for _, f := range m.faults {
		p.Faults = append(p.Faults, faultRow{ID: f.id, Name: f.name, Targets: targetsText(f.targets),
			From: fmtAt(f.at), To: fmtAt(f.end), Params: f.params})
	}
	p.Overview, p.Compact = template.HTML(renderOverview(m)), len(m.eps) > smallFleetEndpoints
	if m.derived {
		p.TimelineNote = "Some endpoints had no ownership beliefs recorded; their holdings are derived from polls."
	}
	if len(m.eps) > smallFleetEndpoints {
		eps, omitted := m.detailEndpoints(maxDetailEndpoints)
		if len(eps) > 0 {
			p.Detail = template.HTML(renderDetail(m, eps))
		}
		if omitted > 0 {
			p.DetailNote = fmt.Sprintf("%d more endpoints with violations or takeovers are not drawn in detail; the tables list them all.", omitted)
		}
	}
	p.Groups, p.Failovers, p.FailoverHeadline = failoverRows(m)
	p.Balance = template.HTML(renderBalance(m))
	if len(m.rep.Balance) > 0 {
		p.BalanceNote = balanceSummary(m)
	}
	p.Ops = template.HTML(renderOps(m))
	cards := 0
	for _, g := range m.diag {
		count := plural(len(g.viols)+g.extra, "violation", "violations")
		if !m.passed { // a passing run's violations were expected: the page keeps its usual order
			p.Diagnosis = append(p.Diagnosis, diagView{ID: g.id, Title: g.title, Count: count, Text: g.text})
		}
		gv := violGroupView{ID: g.id, Title: g.title, Count: count, Text: g.text}
		carded := cardPicks(m, g)
		for _, vi := range g.viols {
			v := m.viols[vi]
			vv := violViewOf(m, v)
			if !carded[vi] || cards >= maxExcerpts {
				gv.Rest = append(gv.Rest, vv)
				continue
			}
			cards++
			vv.Rows, vv.Excerpted = m.excerpt(v), true
			if cards <= maxZooms {
				vv.Zoom = template.HTML(renderZoom(m, v))
			}
			gv.Cards = append(gv.Cards, vv)
		}
		p.Violations = append(p.Violations, gv)
	}
	for _, v := range m.caught {
		vv := violViewOf(m, v)
		if v.n <= maxExcerpts {
			vv.Rows, vv.Excerpted = m.excerpt(v), true
		}
		p.Caught = append(p.Caught, vv)
	}
	for _, v := range m.inconc {
		vv := violViewOf(m, v)
		if v.n <= maxExcerpts {
			vv.Rows, vv.Excerpted = m.excerpt(v), true
		}
		p.Inconclusive = append(p.Inconclusive, vv)
	}
	p.Files = runFiles(linOK)
	return reportTmpl.Execute(w, p)
}

// cardPicks chooses the violations of a group shown as cards: the first of each invariant, beliefs and
// the resource first (single-holder, single-poller, stale-poll, validity, then the others), then the
// earliest others, up to maxCardsPerGroup.
func cardPicks(m *model, g diagGroup) map[int]bool {
	rank := func(inv string) int {
		switch inv {
		case checker.InvSingleHolder:
			return 0
		case checker.InvSinglePoller:
			return 1
		case checker.InvStalePoll:
			return 2
		case checker.InvValidity:
			return 3
		}
		return 4
	}
	firsts := map[string]int{}
	var order []int
	for _, vi := range g.viols {
		if _, ok := firsts[m.viols[vi].invariant]; !ok {
			firsts[m.viols[vi].invariant] = vi
			order = append(order, vi)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(m.viols[a].invariant) - rank(m.viols[b].invariant) })
	picked := map[int]bool{}
	for _, vi := range append(order, g.viols...) {
		if len(picked) == maxCardsPerGroup {
			break
		}
		picked[vi] = true
	}
	return picked
}

// violViewOf describes a violation or a caught finding for the page.
func violViewOf(m *model, v violInfo) violView {
	vv := violView{
		ID: v.id(), Invariant: v.invariant, Status: v.st.label(), Class: v.st.class(), At: fmtAt(v.v.At),
		Endpoint: v.v.Endpoint, Instances: strings.Join(m.shortIDs(v.v.Instances), ", "), Message: m.humanize(v.v.Message),
		Outside: strings.Join(v.v.Outside, ", "),
	}
	if v.v.Lag != nil {
		vv.Lag = v.v.Lag.String()
	}
	switch {
	case v.st == stCaught:
		vv.Reached = "stopped before the resource (safe)"
	case v.st == stInconclusive:
	case v.invariant == checker.InvSinglePoller || v.invariant == checker.InvValidity:
		vv.Reached = "reached the resource"
	case v.invariant == checker.InvSingleHolder && v.v.ReachedResource:
		vv.Reached = "a stale poll reached the resource"
	case v.invariant == checker.InvSingleHolder:
		vv.Reached = "no stale poll reached the resource"
	case v.invariant == checker.InvStalePoll:
		vv.Reached = "refused by fencing, but inside the assumptions"
	}
	return vv
}

// interruptedHeadline says why an interrupted run has no verdict, and what it showed all the same.
func interruptedHeadline(m *model) string {
	s := fmt.Sprintf("The run was stopped after %s, before its end: its history is partial, so no verdict is drawn from it", fmtDur(m.meta.Duration))
	if n := len(m.viols) + m.truncated(); n > 0 {
		s += fmt.Sprintf(". What it recorded already shows %s, listed below", plural(n, "violation", "violations"))
	}
	if m.meta.Command != "" {
		return s + ". Run it again to completion: " + m.meta.Command
	}
	return s + ". Run it again to completion."
}

// passHeadline says in one line why a run passed.
func passHeadline(m *model) string {
	held, skipped, expected := 0, 0, 0
	for _, r := range m.results {
		switch r.st {
		case stPass, stCaught:
			held++
		case stSkipped:
			skipped++
		case stExpected:
			expected++
		}
	}
	s := fmt.Sprintf("Every invariant checked held (%d held, %d skipped)", held, skipped)
	if len(m.outsideFaults()) > 0 {
		s = fmt.Sprintf("Every invariant checked held (%d held, %d skipped) under the system's assumptions; what the faults declared outside them did is said below", held, skipped)
	}
	if expected > 0 {
		s = fmt.Sprintf("Every expected violation happened (%s), and the other invariants held", strings.Join(m.expected, ", "))
	}
	if n := m.caughtCount(); n > 0 {
		s += fmt.Sprintf("; %s outside the system's assumptions %s caught before the resource (safe)", plural(n, "finding", "findings"),
			map[bool]string{true: "was", false: "were"}[n == 1])
	}
	return s + "."
}

// subline is the line under the title: what ran, on what, with which seed.
func subline(m *model) string {
	mt := m.meta
	parts := []string{"system " + orDash(mt.System)}
	if mt.Suite != "" {
		parts = append(parts, "suite "+mt.Suite)
	}
	parts = append(parts, fmt.Sprintf("seed %d", mt.Seed))
	if m.election() {
		parts = append(parts, fmt.Sprintf("%s × %s", plural(mt.Instances, "candidate", "candidates"), plural(max(mt.Endpoints, 1), "role", "roles")))
	} else if mt.Instances > 0 {
		parts = append(parts, fmt.Sprintf("%s × %s", plural(mt.Instances, "instance", "instances"), plural(mt.Endpoints, "endpoint", "endpoints")))
	}
	parts = append(parts, fmtDur(m.dur)+" at time scale "+fmt.Sprint(mt.TimeScale))
	if b := backendShort(mt.Backend); b != "" {
		parts = append(parts, b)
	}
	return strings.Join(parts, " · ")
}

// backendShort names the deployment a run used, in full but without what only a machine needs (build
// hashes, addresses, timeouts): "redis-server 7.0.15", "Redis Cluster, 3 primaries and 3 replicas",
// "3 independent redis-server 7.0.15 nodes, no replication", "Sentinel set of redis-server 7.0.15: 1
// primary, 2 replicas, 3 sentinels", "PostgreSQL at 127.0.0.1:5432".
func backendShort(b string) string {
	if pg, ok := strings.CutPrefix(b, "PostgreSQL at "); ok {
		addr, _, _ := strings.Cut(pg, " ")
		return "PostgreSQL at " + addr
	}
	head, paren, _ := strings.Cut(b, " (")
	paren, _, _ = strings.Cut(paren, ")")
	head, _, _ = strings.Cut(head, " on ")
	f := strings.Fields(head)
	if len(f) < 3 || f[0] != "Redis" || f[1] != "server" || !strings.HasPrefix(f[2], "v=") {
		switch {
		case strings.HasPrefix(head, "Redis Cluster"), strings.HasPrefix(head, "external Redis"):
			return head
		case len(f) > 3:
			return strings.Join(f[:3], " ")
		}
		return strings.Join(f, " ")
	}
	server := "redis-server " + strings.TrimPrefix(f[2], "v=")
	var rest []string // the words after the build fields: the topology
	for _, w := range f[3:] {
		if !strings.Contains(w, "=") {
			rest = append(rest, w)
		}
	}
	detail := strings.TrimPrefix(paren, "private: ")
	switch strings.Join(rest, " ") {
	case "independent nodes":
		n, tail, _ := strings.Cut(detail, " primaries")
		return fmt.Sprintf("%s independent %s nodes%s", n, server, tail)
	case "Sentinel set":
		parts := strings.Split(detail, ", ")
		return fmt.Sprintf("Sentinel set of %s: %s", server, strings.Join(parts[:min(3, len(parts))], ", "))
	}
	if _, p, ok := strings.Cut(detail, "persistence "); ok {
		return server + ", persistence " + p
	}
	return server
}

// shortIDs abbreviates instance IDs as the timeline does.
func (m *model) shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id
		if k, ok := m.instIdx[id]; ok {
			out[i] = m.insts[k].short
		}
	}
	return out
}

// params lists the scenario's parameters.
func params(m *model) []kv {
	mt := m.meta
	out := []kv{
		{"scenario", mt.Scenario}, {"system", mt.System}, {"kind", mt.Kind}, {"backend", mt.Backend},
		{"seed", fmt.Sprint(mt.Seed)}, {"time scale", fmt.Sprint(mt.TimeScale)},
		fleetParam(m),
		{"lease TTL", fmtDur(mt.LeaseTTL)}, {"failover bound", fmtDur(mt.FailoverBound)},
		{"poll interval", fmtDur(mt.PollInterval)}, {"fencing", fencingText(m)},
		{"duration", fmtDur(m.dur)},
		{"events", fmt.Sprintf("%d (%s, %s, %d refused by fencing)", len(m.ev), plural(m.rep.Ops, "operation", "operations"), plural(m.rep.Polls, "poll", "polls"), m.rep.Refused)},
		{"assumptions", assumptionsText(mt.Assumptions)},
	}
	if mt.Lag != nil {
		out = append(out, kv{"harness lag", lagSummaryText(mt.Lag)})
	}
	if mt.Suite != "" {
		out = append(out, kv{"suite", mt.Suite})
	}
	if len(m.expected) > 0 {
		out = append(out, kv{"expected violations", strings.Join(m.expected, ", ")})
	}
	if !mt.StartedAt.IsZero() {
		out = append(out, kv{"started", mt.StartedAt.UTC().Format(time.RFC3339)})
	}
	if len(mt.Steady) > 0 {
		var ws []string
		for _, w := range mt.Steady {
			ws = append(ws, fmtDur(w.From)+"–"+fmtDur(w.To))
		}
		out = append(out, kv{"steady windows", strings.Join(ws, ", ")})
	}
	return out
}

// fencingText says whether fencing was at work: the resource checks tokens when the scenario asks it
// to, but only a system that sends them is fenced.
func fencingText(m *model) string {
	if !m.meta.Fencing {
		return "not used: the resource does not check tokens"
	}
	for _, r := range m.results {
		if r.res.Invariant == checker.InvFencing && r.res.Outcome == checker.Skipped {
			return "not in effect: the resource refuses stale tokens, but the system sent none"
		}
	}
	return "used: the resource refuses stale tokens"
}

// fleetParam is the size of the fleet in the run's words.
func fleetParam(m *model) kv {
	if m.election() {
		return kv{"candidates", fmt.Sprintf("%d, for %s", m.meta.Instances, plural(max(m.meta.Endpoints, 1), "role", "roles"))}
	}
	return kv{"instances × endpoints", fmt.Sprintf("%d × %d", m.meta.Instances, m.meta.Endpoints)}
}

// assumptionsText states the system's assumptions as the history records them.
func assumptionsText(a history.Assumptions) string {
	if a.DriftBound == 0 && a.Persistence == "" && a.Topology == "" && len(a.Outside) == 0 {
		return "not recorded"
	}
	s := fmt.Sprintf("drift bound %g", a.DriftBound)
	if a.Persistence != "" {
		s += ", persistence " + a.Persistence
	}
	if a.Topology != "" {
		s += ", topology " + a.Topology
	}
	if len(a.Outside) > 0 {
		s += "; outside them: " + strings.Join(a.Outside, ", ")
	}
	return s
}

func targetsText(ts []string) string {
	if len(ts) == 0 {
		return "backend / all"
	}
	return strings.Join(ts, ", ")
}

// runFiles lists the files of a run's directory.
func runFiles(linOK bool) []fileLink {
	fs := []fileLink{
		{FileSummary, "Markdown summary for a pull request"},
		{FileResult, "machine-readable verdict (schema in SCHEMA.md)"},
		{FileJUnit, "JUnit XML, one test case per invariant"},
		{FileHistory, "full recorded history; re-check with simrun report DIR"},
	}
	if linOK {
		fs = append([]fileLink{{FileLinearizability, "linearizability checker's visualization"}}, fs...)
	}
	return fs
}
