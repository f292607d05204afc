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
	Started, Backend                                                                     string
	Cells                                                                                []suiteCell
	passed                                                                               bool
}

type suitePage struct {
	CSS            template.CSS
	Suite, Verdict string
	VerdictClass   string
	Passed, Total  int
	Invariants     []string
	Rows           []suiteRow
	Failed         []suiteRow
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
// report.html by its relative directory. It creates dir if needed.
func WriteSuite(dir, suite string, runs []SuiteEntry) error {
	if dir == "" {
		return ErrNoDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	p := suitePage{CSS: template.CSS(styleCSS), Suite: suite, Total: len(runs), Invariants: invariantColumns(runs)}
	var jruns []junitRun
	for _, r := range runs {
		row := suiteRowOf(r, p.Invariants)
		p.Rows = append(p.Rows, row)
		if r.Passed {
			p.Passed++
		} else {
			p.Failed = append(p.Failed, row)
		}
		jruns = append(jruns, junitRunOf(r.Meta, r.Report, r.Meta.Expect))
	}
	// Failures first; otherwise in the order the runs were given.
	slices.SortStableFunc(p.Rows, func(a, b suiteRow) int {
		switch {
		case a.passed == b.passed:
			return 0
		case !a.passed:
			return -1
		default:
			return 1
		}
	})
	p.Verdict, p.VerdictClass = "PASSED", "pass"
	if p.Passed < p.Total {
		p.Verdict, p.VerdictClass = "FAILED", "violated"
	}
	return errors.Join(
		writeFileWith(filepath.Join(dir, FileIndex), func(w io.Writer) error { return indexTmpl.Execute(w, p) }),
		writeFileWith(filepath.Join(dir, FileSummary), func(w io.Writer) error { return suiteMarkdown(w, p) }),
		writeFileWith(filepath.Join(dir, FileJUnit), func(w io.Writer) error { return writeJUnit(w, suite, jruns) }),
	)
}

// suiteRowOf summarises one run.
func suiteRowOf(r SuiteEntry, cols []string) suiteRow {
	mt := r.Meta
	row := suiteRow{
		Scenario: mt.Scenario, System: mt.System, Seed: fmt.Sprint(mt.Seed), Report: r.link(FileReport),
		Summary: r.link(FileSummary), Duration: fmtDur(mt.Duration), Command: mt.Command,
		Backend: backendShort(mt.Backend), passed: r.Passed,
	}
	if !mt.StartedAt.IsZero() {
		row.Started = mt.StartedAt.UTC().Format("2006-01-02 15:04")
	}
	row.Verdict, row.Class = "failed", "violated"
	if r.Passed {
		row.Verdict, row.Class = "passed", "pass"
	}
	if mt.Interrupted {
		row.Verdict = "interrupted"
	}
	for _, inv := range cols {
		cell := suiteCell{Text: "·", Class: "skipped", Tip: "not checked"}
		for _, res := range r.Report.Results {
			if res.Invariant != inv {
				continue
			}
			st := statusOf(res, mt.Expect)
			cell = suiteCell{Text: st.label(), Class: st.class(), Tip: oneLine(res.Message, 300)}
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
	icon := "✅"
	if p.Passed < p.Total {
		icon = "❌"
	}
	fmt.Fprintf(&b, "### %s suite %s: %d of %d scenarios passed\n\n", icon, mdCell(p.Suite, 60), p.Passed, p.Total)
	b.WriteString("| scenario | verdict |")
	for _, inv := range p.Invariants {
		b.WriteString(" " + inv + " |")
	}
	b.WriteString(" failover p50 / max (bound) |\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(p.Invariants)))
	b.WriteString("---|\n")
	for _, r := range p.Rows {
		v := "✅"
		if r.Class != "pass" {
			v = "❌"
		}
		fmt.Fprintf(&b, "| [%s](%s) | %s |", mdCell(r.Scenario, 60), r.Report, v)
		for _, c := range r.Cells {
			fmt.Fprintf(&b, " %s |", cellIcon(c.Class))
		}
		fmt.Fprintf(&b, " %s |\n", mdCell(orDash(r.Failover), 60))
	}
	if len(p.Failed) > 0 {
		b.WriteString("\nReplay the failed scenarios:\n\n```sh\n")
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
	default:
		return "–"
	}
}
