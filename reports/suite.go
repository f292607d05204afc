package reports

import (
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

//go:embed index.tmpl
var indexTmplText string

var indexTmpl = template.Must(template.New("index").Parse(indexTmplText))

// SuiteEntry is one run of a suite, as WriteSuite lists it.
type SuiteEntry struct {
	// Dir is the run's directory, relative to the suite's directory.
	Dir string
	// Meta is the run's history header; Meta.Expect gives the expected violations.
	Meta history.Meta
	// Report is the checker's report of the run.
	Report checker.Report
	// Passed is the run's verdict after expectations.
	Passed bool
	// Pruned says that Dir holds only the run's result.json (a campaign deletes the other files of runs
	// that passed, to save disk): the index names the run and links its result.json instead of its report.
	Pruned bool

	_ struct{}
}

// link returns the relative URL of a file in the entry's directory.
func (e SuiteEntry) link(file string) string {
	var segs []string
	for _, s := range strings.Split(filepath.ToSlash(e.Dir), "/") {
		if s != "" && s != "." {
			segs = append(segs, url.PathEscape(s))
		}
	}
	return path.Join(append(segs, file)...)
}

type suiteCell struct{ Text, Class, Tip string }

type suiteRow struct {
	Scenario, System, Seed, Verdict, Class, Report, Summary, Failover, Duration, Command string
	Started, Backend, SummaryWord                                                        string
	Cells                                                                                []suiteCell
	passed, inconclusive, interrupted                                                    bool
}

type suitePage struct {
	CSS            template.CSS
	Suite, Verdict string
	Title, Counted string // "suite ci", "scenarios"; "campaign 3f9a21c0d4e2", "runs"
	Notes          []string
	VerdictClass   string
	Passed, Total  int
	Inconclusive   int
	Interrupted    int
	Invariants     []string
	Rows           []suiteRow
	Failed         []suiteRow
}

// IndexOptions shape an index over runs that are not a suite's (a campaign's runs of many scenarios on
// many seeds).
type IndexOptions struct {
	// Title heads the page and names the JUnit file's top element ("campaign 3f9a21c0d4e2"); empty
	// means "suite NAME".
	Title string
	// Notes are lines shown under the title (seeds, shards, wall time).
	Notes []string
	// BySeed names each run by its scenario and seed, in the page and in junit.xml: a scenario run on
	// many seeds would otherwise give test suites of one name, which CI test views fold together.
	BySeed bool

	_ struct{}
}

// invariantColumns returns every invariant reported by any run, in order of first appearance.
func invariantColumns(runs []SuiteEntry) []string {
	var cols []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, res := range r.Report.Results {
			if !seen[res.Invariant] {
				seen[res.Invariant] = true
				cols = append(cols, res.Invariant)
			}
		}
	}
	return cols
}

// WriteSuite writes index.html, summary.md and junit.xml for a suite into dir, linking each run's
// report.html by its relative directory. It creates dir if needed, and marks it as a suite of these runs
// unless it is marked already as a collection (a suite, matrix, bench or campaign, whose marker names
// its runs); it refuses a run's directory.
func WriteSuite(dir, suite string, runs []SuiteEntry) error {
	if dir == "" {
		return ErrNoDir
	}
	if err := ensureMarker(dir, KindSuite, runDirs(runs)); err != nil {
		return err
	}
	p, jruns := suitePageOf(suite, runs, IndexOptions{})
	return errors.Join(
		writeIndexFiles(dir, p, jruns),
		writeFileWith(filepath.Join(dir, FileSummary), func(w io.Writer) error { return suiteMarkdown(w, p) }),
	)
}

// WriteIndex writes index.html and junit.xml over runs into dir, as WriteSuite does, and leaves
// summary.md to the caller (a campaign groups its runs its own way). It creates dir if needed, and marks
// it as a campaign of these runs unless it is marked already as a collection; it refuses a run's
// directory.
func WriteIndex(dir, name string, runs []SuiteEntry, o IndexOptions) error {
	if dir == "" {
		return ErrNoDir
	}
	if err := ensureMarker(dir, KindCampaign, runDirs(runs)); err != nil {
		return err
	}
	p, jruns := suitePageOf(name, runs, o)
	return writeIndexFiles(dir, p, jruns)
}

// runDirs are the entries' directories inside the collection's, for its marker (a merged campaign
// links runs that live in its shards' directories).
func runDirs(runs []SuiteEntry) []string {
	var dirs []string
	for _, r := range runs {
		if d := filepath.Clean(r.Dir); d != "." && filepath.IsLocal(d) {
			dirs = append(dirs, filepath.ToSlash(d))
		}
	}
	return dirs
}

// suitePageOf builds the index page and the JUnit runs of a set of runs.
func suitePageOf(suite string, runs []SuiteEntry, o IndexOptions) (suitePage, []junitRun) {
	p := suitePage{CSS: template.CSS(styleCSS), Suite: suite, Title: "suite " + suite, Counted: "scenarios",
		Notes: o.Notes, Total: len(runs), Invariants: invariantColumns(runs)}
	if o.Title != "" {
		p.Title, p.Counted = o.Title, "runs"
	}
	var jruns []junitRun
	for _, r := range runs {
		row := suiteRowOf(r, p.Invariants)
		if o.BySeed {
			row.Scenario = fmt.Sprintf("%s seed %d", r.Meta.Scenario, r.Meta.Seed)
		}
		p.Rows = append(p.Rows, row)
		switch {
		case row.interrupted:
			p.Interrupted++
			p.Failed = append(p.Failed, row)
		case r.Passed:
			p.Passed++
		case row.inconclusive:
			p.Inconclusive++
			p.Failed = append(p.Failed, row)
		default:
			p.Failed = append(p.Failed, row)
		}
		jr := junitRunOf(r.Meta, r.Report, r.Meta.Expect)
		jr.bySeed = o.BySeed
		jruns = append(jruns, jr)
	}
	// Failures first, then interrupted and inconclusive runs; otherwise in the order the runs were given.
	rank := func(r suiteRow) int {
		switch {
		case r.interrupted:
			return 1
		case r.passed:
			return 3
		case r.inconclusive:
			return 2
		}
		return 0
	}
	slices.SortStableFunc(p.Rows, func(a, b suiteRow) int { return rank(a) - rank(b) })
	// An interrupted run makes the whole interrupted, as simrun's exit status says: what did not run to
	// its end concludes nothing.
	switch {
	case p.Interrupted > 0:
		p.Verdict, p.VerdictClass = "INTERRUPTED", "interrupted"
	case p.Passed == p.Total:
		p.Verdict, p.VerdictClass = "PASSED", "pass"
	case p.Passed+p.Inconclusive == p.Total:
		p.Verdict, p.VerdictClass = "INCONCLUSIVE", "inconclusive"
	default:
		p.Verdict, p.VerdictClass = "FAILED", "violated"
	}
	return p, jruns
}

// writeIndexFiles writes index.html and junit.xml.
func writeIndexFiles(dir string, p suitePage, jruns []junitRun) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	name := p.Suite
	if p.Counted == "runs" {
		name = p.Title
	}
	return errors.Join(
		writeFileWith(filepath.Join(dir, FileIndex), func(w io.Writer) error { return indexTmpl.Execute(w, p) }),
		writeFileWith(filepath.Join(dir, FileJUnit), func(w io.Writer) error { return writeJUnit(w, name, jruns) }),
	)
}

// suiteRowOf summarises one run.
func suiteRowOf(r SuiteEntry, cols []string) suiteRow {
	mt := r.Meta
	row := suiteRow{
		Scenario: mt.Scenario, System: mt.System, Seed: fmt.Sprint(mt.Seed), Report: r.link(FileReport),
		Summary: r.link(FileSummary), SummaryWord: "summary", Duration: fmtDur(mt.Duration), Command: mt.Command,
		Backend: backendShort(mt.Backend), passed: r.Passed && !mt.Interrupted, inconclusive: !r.Passed && Inconclusive(r.Report, ExpectOf(mt)),
		interrupted: mt.Interrupted,
	}
	if r.Pruned {
		row.Report, row.Summary, row.SummaryWord = "", r.link(FileResult), "result.json"
	}
	if !mt.StartedAt.IsZero() {
		row.Started = mt.StartedAt.UTC().Format("2006-01-02 15:04")
	}
	v := verdictOf(r.Passed, row.inconclusive, mt.Interrupted)
	row.Verdict, row.Class = strings.ToLower(v.Word), v.Class
	if v.Class == "inconclusive" {
		if lag := lagOfReport(r.Report); lag != "" {
			row.Verdict += " (" + lag + ")"
		}
	}
	for _, inv := range cols {
		cell := suiteCell{Text: "·", Class: "skipped", Tip: "not checked"}
		for _, res := range r.Report.Results {
			if res.Invariant != inv {
				continue
			}
			st := statusOf(res, ExpectOf(mt))
			cell = suiteCell{Text: st.label(), Class: st.class(), Tip: oneLine(roundDurations(res.Message), 300)}
			if n := len(res.Violations) + res.Truncated; n > 0 {
				cell.Text = fmt.Sprintf("%s (%d)", st.label(), n)
			} else if n := res.CaughtCount(); n > 0 {
				cell.Text = fmt.Sprintf("%s (%d)", st.label(), n)
			}
		}
		row.Cells = append(row.Cells, cell)
	}
	if lat := (&model{rep: r.Report}).allFailoverLatencies(); len(lat) > 0 {
		row.Failover = fmt.Sprintf("%s / %s (%s)", fmtDur(percentile(lat, 50)), fmtDur(lat[len(lat)-1]), boundsText(r.Report.Failovers, mt.FailoverBound))
	}
	return row
}

// suiteMarkdown writes the suite's summary.md.
func suiteMarkdown(w io.Writer, p suitePage) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s %s: %s · %d of %d %s passed", verdictIcon(p.VerdictClass), mdCell(p.Title, 60), p.Verdict, p.Passed, p.Total, p.Counted)
	if p.Inconclusive > 0 {
		fmt.Fprintf(&b, ", %d inconclusive (the harness ran too late to judge them)", p.Inconclusive)
	}
	if p.Interrupted > 0 {
		fmt.Fprintf(&b, ", %d interrupted (stopped before their end: no verdict)", p.Interrupted)
	}
	b.WriteString("\n\n")
	b.WriteString("| scenario | verdict |")
	for _, inv := range p.Invariants {
		b.WriteString(" " + inv + " |")
	}
	b.WriteString(" failover p50 / max (bound) |\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(p.Invariants)))
	b.WriteString("---|\n")
	for _, r := range p.Rows {
		v := verdictIcon(r.Class)
		if r.Report == "" {
			fmt.Fprintf(&b, "| %s | %s |", mdCell(r.Scenario, 60), v)
		} else {
			fmt.Fprintf(&b, "| [%s](%s) | %s |", mdCell(r.Scenario, 60), r.Report, v)
		}
		for _, c := range r.Cells {
			fmt.Fprintf(&b, " %s |", cellIcon(c.Class))
		}
		fmt.Fprintf(&b, " %s |\n", mdCell(orDash(r.Failover), 60))
	}
	if len(p.Failed) > 0 {
		fmt.Fprintf(&b, "\nReplay the %s that did not pass:\n\n```sh\n", p.Counted)
		for _, r := range p.Failed {
			fmt.Fprintf(&b, "%s\n", orDash(r.Command))
		}
		b.WriteString("```\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cellIcon is a status class as a Markdown symbol.
func cellIcon(class string) string {
	switch class {
	case "pass":
		return "✅"
	case "expected":
		return "✅ (expected violation)"
	case "violated":
		return "❌"
	case "unknown":
		return "❓"
	case "caught":
		return "🛡️ (caught)"
	case "inconclusive":
		return "⏳ (inconclusive)"
	default:
		return "–"
	}
}

// lagOfReport names the worst harness lag the report's inconclusive findings coincided with, "" for none.
func lagOfReport(rep checker.Report) string {
	var worst *checker.LagFinding
	for _, res := range rep.Results {
		for _, v := range res.Inconclusive {
			if v.Lag != nil && (worst == nil || v.Lag.Max > worst.Max) {
				worst = v.Lag
			}
		}
	}
	if worst == nil {
		return ""
	}
	return "harness lag " + fmtDur(worst.Max)
}
