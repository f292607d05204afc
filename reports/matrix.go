package reports

import (
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
)

// A matrix is every system × every scenario of its kind: Tenure's own systems, which must pass every
// cell, beside the baselines and peers, which are there to fail. Its index is that grid, not a list of
// runs, and each cell says which of four things it is: a pass, an expected failure (a baseline or peer
// failing: what it is in the matrix to show), an unexpected result (one of Tenure's systems failing, or
// a baseline passing the cell its flaw shows in: the harness missed it), or inconclusive (no run failed
// and one could not be judged: never a pass, never an expected failure). The badge follows from the cells
// alone, and so does simrun's exit status (MatrixVerdict), so they agree.

// MatrixStatus is what a matrix cell says.
type MatrixStatus string

// Cell statuses.
const (
	MatrixPass         MatrixStatus = "pass"
	MatrixExpected     MatrixStatus = "expected"     // a baseline or peer failed: its expected output
	MatrixUnexpected   MatrixStatus = "unexpected"   // Tenure's system failed, or a baseline passed its characteristic cell
	MatrixInconclusive MatrixStatus = "inconclusive" // no run failed, and the harness ran too late to judge one
	MatrixError        MatrixStatus = "error"        // no run of the cell could be set up
)

// MatrixCell is one system × scenario, over every seed it ran on.
type MatrixCell struct {
	System, Scenario string
	Status           MatrixStatus
	// Text is the cell's content: "pass", the cell words of the invariants violated ("two-holders
	// double-poll"), with k/N failed seeds when there were several.
	Text string
	// Characteristic marks the cell a baseline's or peer's known flaw shows in.
	Characteristic bool
	// Unasserted marks a cell the matrix expects nothing of: a baseline's or peer's cell other than its
	// characteristic ones, where a pass and a failure are both as expected. Inconclusive, it is shown and
	// counted as such, but leaves the badge as the other cells make it: whatever its runs would have
	// shown, the matrix's verdict would be the same. Every other inconclusive cell (one of Tenure's
	// systems', a characteristic one) makes the matrix INCONCLUSIVE.
	Unasserted bool
	// Report is the report of the cell's first failing run (else its first run), relative to the
	// matrix's directory; "" when there is none.
	Report string
	// Why says in a sentence what the status means for this cell (the cell's tooltip).
	Why string

	_ struct{}
}

// MatrixGroup is one table of the grid: the systems of one kind of scenario (lease, election on Redis,
// election on PostgreSQL), which have no cells in another.
type MatrixGroup struct {
	Title     string
	Systems   []string
	Scenarios []string
}

// MatrixRun is a run that did not pass, for the list under the grid.
type MatrixRun struct {
	System, Scenario string
	Seed             int64
	What, Report     string // the cell words, or why it could not run; its report, relative
	Replay           string

	_ struct{}
}

// Matrix is what WriteMatrix draws.
type Matrix struct {
	// Notes are lines under the title (seeds, time scale, how long it took).
	Notes  []string
	Groups []MatrixGroup
	Cells  []MatrixCell
	// Failing lists every run that did not pass, baselines' included.
	Failing []MatrixRun
	// Runs are the runs that ran, for junit.xml.
	Runs []SuiteEntry
}

// MatrixVerdict is the matrix's badge and simrun's exit status in one: FAILED when a cell is
// unexpected, INCONCLUSIVE when one the matrix asserts something of (not Unasserted) is inconclusive and
// none unexpected, else PASSED (the matrix came out as expected, the baselines' failures included).
func MatrixVerdict(cells []MatrixCell) Verdict {
	v := Verdict{"PASSED", "pass"}
	for _, c := range cells {
		switch {
		case c.Status == MatrixUnexpected:
			return Verdict{"FAILED", "violated"}
		case c.Status == MatrixInconclusive && !c.Unasserted:
			v = Verdict{"INCONCLUSIVE", "inconclusive"}
		}
	}
	return v
}

// matrixIcon is a cell status as a symbol, in the grid and in Markdown.
func matrixIcon(s MatrixStatus) string {
	switch s {
	case MatrixPass:
		return "✅"
	case MatrixExpected:
		return "☑️"
	case MatrixUnexpected:
		return "❌"
	case MatrixInconclusive:
		return "⏳"
	}
	return "⚠️"
}

// matrixSymbol is a cell status as a character every font has, for the HTML grid (whose colours carry
// the rest): emoji are not drawn everywhere.
func matrixSymbol(s MatrixStatus) string {
	switch s {
	case MatrixPass:
		return "✓"
	case MatrixExpected, MatrixUnexpected:
		return "✗"
	case MatrixInconclusive:
		return "~"
	}
	return "!"
}

// matrixLegend explains the cell statuses, for the page and the summary alike.
var matrixLegend = []struct {
	Status MatrixStatus
	Text   string
}{
	{MatrixPass, "pass: every invariant held on every seed"},
	{MatrixExpected, "expected failure: a baseline or peer failed, which is what it is in the matrix to show (★ marks the cell its known flaw shows in)"},
	{MatrixUnexpected, "unexpected: one of Tenure's systems failed, or a baseline passed the cell its flaw shows in (the harness missed it)"},
	{MatrixInconclusive, "inconclusive: no run failed, and the harness itself ran too late to judge one: neither a pass nor an expected failure (in one of Tenure's systems' cells or a ★ cell, it makes the matrix INCONCLUSIVE)"},
	{MatrixError, "error: the cell could not be set up"},
}

//go:embed matrix.tmpl
var matrixTmplText string

var matrixTmpl = template.Must(template.New("matrix").Parse(matrixTmplText))

type matrixPageCell struct {
	Text, Class, Icon, Why, Report string
	Characteristic, Empty          bool
}

type matrixPageRow struct {
	System string
	Cells  []matrixPageCell
}

type matrixPageGroup struct {
	Title     string
	Scenarios []string
	Rows      []matrixPageRow
}

type matrixPage struct {
	CSS                   template.CSS
	Verdict, VerdictClass string
	Counts                string
	Notes                 []string
	Legend                []matrixLegendItem
	Groups                []matrixPageGroup
	Failing               []MatrixRun
}

type matrixLegendItem struct{ Icon, Class, Text string }

// WriteMatrix writes index.html (the grid), summary.md (the grid in Markdown, with the badge) and
// junit.xml into dir, marked as a matrix of m's runs.
func WriteMatrix(dir string, m Matrix) error {
	if dir == "" {
		return ErrNoDir
	}
	if err := ensureMarker(dir, KindMatrix, runDirs(m.Runs)); err != nil {
		return err
	}
	p := matrixPageOf(m)
	var jruns []junitRun
	for _, r := range m.Runs {
		jruns = append(jruns, junitRunOf(r.Meta, r.Report, r.Meta.Expect))
	}
	return errors.Join(
		writeFileWith(filepath.Join(dir, FileIndex), func(w io.Writer) error { return matrixTmpl.Execute(w, p) }),
		writeFileWith(filepath.Join(dir, FileJUnit), func(w io.Writer) error { return writeJUnit(w, "matrix", jruns) }),
		writeFileWith(filepath.Join(dir, FileSummary), func(w io.Writer) error {
			_, err := io.WriteString(w, MatrixMarkdown(m, true))
			return err
		}),
	)
}

// matrixCounts says how many cells there are of each status: "14 cells: 6 pass, 7 expected failures, 1
// unexpected".
func matrixCounts(cells []MatrixCell) string {
	n := map[MatrixStatus]int{}
	for _, c := range cells {
		n[c.Status]++
	}
	parts := []string{fmt.Sprintf("%d pass", n[MatrixPass])}
	if k := n[MatrixExpected]; k > 0 {
		parts = append(parts, plural(k, "expected failure", "expected failures"))
	}
	parts = append(parts, fmt.Sprintf("%d unexpected", n[MatrixUnexpected]))
	if k := n[MatrixInconclusive]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d inconclusive", k))
	}
	if k := n[MatrixError]; k > 0 {
		parts = append(parts, plural(k, "error", "errors"))
	}
	return plural(len(cells), "cell", "cells") + ": " + strings.Join(parts, ", ")
}

func matrixPageOf(m Matrix) matrixPage {
	v := MatrixVerdict(m.Cells)
	p := matrixPage{CSS: template.CSS(styleCSS), Verdict: v.Word, VerdictClass: v.Class, Counts: matrixCounts(m.Cells),
		Notes: m.Notes, Failing: m.Failing}
	for _, l := range matrixLegend {
		p.Legend = append(p.Legend, matrixLegendItem{Icon: matrixSymbol(l.Status), Class: string(l.Status), Text: l.Text})
	}
	at := map[[2]string]MatrixCell{}
	for _, c := range m.Cells {
		at[[2]string{c.System, c.Scenario}] = c
	}
	for _, g := range m.Groups {
		pg := matrixPageGroup{Title: g.Title, Scenarios: g.Scenarios}
		for _, sys := range g.Systems {
			row := matrixPageRow{System: sys}
			for _, sc := range g.Scenarios {
				c, ok := at[[2]string{sys, sc}]
				if !ok {
					row.Cells = append(row.Cells, matrixPageCell{Empty: true, Why: sys + " does not run " + sc})
					continue
				}
				row.Cells = append(row.Cells, matrixPageCell{Text: c.Text, Class: string(c.Status), Icon: matrixSymbol(c.Status),
					Why: c.Why, Report: c.Report, Characteristic: c.Characteristic})
			}
			pg.Rows = append(pg.Rows, row)
		}
		p.Groups = append(p.Groups, pg)
	}
	return p
}

// MatrixMarkdown is the grid in Markdown, one table per group with a system column, each cell its
// status symbol and text (linked to its report when links is set), then the runs that did not pass.
// With links false it is what a pull-request comment or a terminal shows.
func MatrixMarkdown(m Matrix, links bool) string {
	var b strings.Builder
	v := MatrixVerdict(m.Cells)
	fmt.Fprintf(&b, "### %s matrix: %s · %s\n\n", verdictIcon(v.Class), v.Word, matrixCounts(m.Cells))
	for _, l := range matrixLegend {
		fmt.Fprintf(&b, "%s %s  \n", matrixIcon(l.Status), l.Text)
	}
	at := map[[2]string]MatrixCell{}
	for _, c := range m.Cells {
		at[[2]string{c.System, c.Scenario}] = c
	}
	for _, g := range m.Groups {
		fmt.Fprintf(&b, "\n%s:\n\n| system | %s |\n|---%s|\n", g.Title, strings.Join(g.Scenarios, " | "), strings.Repeat("|---", len(g.Scenarios)))
		for _, sys := range g.Systems {
			row := make([]string, len(g.Scenarios))
			for j, sc := range g.Scenarios {
				c, ok := at[[2]string{sys, sc}]
				if !ok {
					row[j] = "—"
					continue
				}
				text := c.Text
				if links && c.Report != "" && c.Status != MatrixPass {
					text = fmt.Sprintf("[%s](%s)", text, filepath.ToSlash(c.Report))
				}
				row[j] = matrixIcon(c.Status) + " " + text
				if c.Characteristic {
					row[j] += " ★"
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", sys, strings.Join(row, " | "))
		}
	}
	if len(m.Failing) > 0 {
		b.WriteString("\nRuns that did not pass:\n\n")
		for _, r := range m.Failing {
			report := ""
			if links && r.Report != "" {
				report = fmt.Sprintf(", [report](%s)", filepath.ToSlash(r.Report))
			}
			fmt.Fprintf(&b, "- %s / %s seed %d: %s%s, replay `%s`\n", r.System, r.Scenario, r.Seed, r.What, report, r.Replay)
		}
	}
	return b.String()
}
