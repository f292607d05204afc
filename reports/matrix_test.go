package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func matrixOf(cells ...MatrixCell) Matrix {
	var systems, scens []string
	seen := map[string]bool{}
	for _, c := range cells {
		if !seen["sys "+c.System] {
			seen["sys "+c.System] = true
			systems = append(systems, c.System)
		}
		if !seen["sc "+c.Scenario] {
			seen["sc "+c.Scenario] = true
			scens = append(scens, c.Scenario)
		}
	}
	return Matrix{Groups: []MatrixGroup{{Title: "Lease systems", Systems: systems, Scenarios: scens}}, Cells: cells}
}

// The matrix's index is a systems × scenarios grid whose badge follows from its cells: baselines
// failing are expected and leave it PASSED; one of Tenure's systems failing, or a baseline passing the
// cell its flaw shows in, is unexpected and makes it FAILED.
func TestMatrixGridAndBadge(t *testing.T) {
	ok := matrixOf(
		MatrixCell{System: "reference", Scenario: "gc-pause", Status: MatrixPass, Text: "pass", Report: "reference/gc-pause-1/report.html"},
		MatrixCell{System: "spec-naive", Scenario: "gc-pause", Status: MatrixExpected, Text: "double-poll", Characteristic: true, Report: "spec-naive/gc-pause-1/report.html"},
		MatrixCell{System: "spec-naive", Scenario: "balance-3x9", Status: MatrixExpected, Text: "imbalance"},
	)
	dir := t.TempDir()
	require.NoError(t, WriteMatrix(dir, ok))
	page := parsePage(t, filepath.Join(dir, FileIndex))
	require.Equal(t, "PASSED", strings.TrimSpace(page.byID("verdict").text.String()), "the baselines' failures are expected")
	require.Contains(t, page.byID("counts").text.String(), "3 cells: 1 pass, 2 expected failures, 0 unexpected")
	require.Len(t, page.byID("legend").byName("li"), 5, "every cell status is explained above the grid")
	grid := page.byClass("matrix")
	require.Len(t, grid, 1)
	rows := grid[0].byName("tr")
	require.Len(t, rows, 3, "a header and one row per system")
	require.Equal(t, []string{"system", "gc-pause", "balance-3x9"}, texts(rows[0].byName("th")))
	require.Equal(t, "reference", strings.TrimSpace(rows[1].byName("th")[0].text.String()))
	cells := rows[2].byClass("mcell")
	require.True(t, cells[0].hasClass("expected"))
	require.Contains(t, cells[0].text.String(), "★", "the characteristic cell is starred")
	require.Equal(t, "spec-naive/gc-pause-1/report.html", cells[0].byName("a")[0].attrs["href"])
	require.True(t, rows[1].byClass("mcell")[1].hasClass("none"), "reference has no cell in balance-3x9 here")

	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.True(t, strings.HasPrefix(md, "### ✅ matrix: PASSED · 3 cells"), md)
	require.Contains(t, md, "| system | gc-pause | balance-3x9 |\n|---|---|---|\n| reference | ✅ pass | — |\n")
	require.NotContains(t, md, "| reference | ✅ [", "a pass is not linked")
	require.Contains(t, md, "| spec-naive | ☑️ [double-poll](spec-naive/gc-pause-1/report.html) ★ | ☑️ imbalance |")

	for _, bad := range []MatrixCell{
		{System: "reference", Scenario: "crash-failover", Status: MatrixUnexpected, Text: "failover>bound"},
		{System: "redlock", Scenario: "gc-pause", Status: MatrixUnexpected, Text: "pass, but expected to fail", Characteristic: true},
	} {
		m := matrixOf(append(ok.Cells, bad)...)
		require.Equal(t, "FAILED", MatrixVerdict(m.Cells).Word)
		dir := t.TempDir()
		require.NoError(t, WriteMatrix(dir, m))
		require.Equal(t, "FAILED", strings.TrimSpace(parsePage(t, filepath.Join(dir, FileIndex)).byID("verdict").text.String()))
		require.True(t, strings.HasPrefix(string(mustRead(t, filepath.Join(dir, FileSummary))), "### ❌ matrix: FAILED"))
	}
	inc := matrixOf(append(ok.Cells, MatrixCell{System: "reference", Scenario: "latency", Status: MatrixInconclusive, Text: "failover>bound~"})...)
	require.Equal(t, "INCONCLUSIVE", MatrixVerdict(inc.Cells).Word)
}

func texts(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strings.TrimSpace(n.text.String())
	}
	return out
}

// An inconclusive cell is never a pass: one of Tenure's systems' or a characteristic one makes the
// matrix INCONCLUSIVE; one the matrix expects nothing of (a baseline's other cells, where a pass and a
// failure are both as expected) is shown and counted, and leaves the badge to the other cells.
func TestMatrixInconclusiveCellsAndTheBadge(t *testing.T) {
	pass := MatrixCell{System: "reference", Scenario: "gc-pause", Status: MatrixPass, Text: "pass"}
	char := MatrixCell{System: "spec-naive", Scenario: "gc-pause", Status: MatrixInconclusive, Text: "failover>bound~", Characteristic: true}
	free := MatrixCell{System: "spec-naive", Scenario: "balance-3x9", Status: MatrixInconclusive, Text: "failover>bound~", Unasserted: true}
	require.Equal(t, "INCONCLUSIVE", MatrixVerdict([]MatrixCell{pass, char}).Word)
	require.Equal(t, "PASSED", MatrixVerdict([]MatrixCell{pass, free}).Word)
	require.Equal(t, "INCONCLUSIVE", MatrixVerdict([]MatrixCell{pass, free, char}).Word)
	md := MatrixMarkdown(matrixOf(pass, free), false)
	require.True(t, strings.HasPrefix(md, "### ✅ matrix: PASSED · 2 cells: 1 pass, 0 unexpected, 1 inconclusive"), md)
	require.Contains(t, md, "| spec-naive | — | ⏳ failover>bound~ |")
}
