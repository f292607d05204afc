package simcli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
)

func TestInconclusiveExitCodes(t *testing.T) {
	t.Parallel()
	pass, inc, fail := summaryRow{passed: true}, summaryRow{inconclusive: true}, summaryRow{}
	require.Equal(t, ExitOK, rowExit(pass))
	require.Equal(t, ExitInconclusive, rowExit(inc))
	require.Equal(t, ExitViolated, rowExit(fail))
	require.Equal(t, "INCONCLUSIVE", rowWord(inc))
	require.Equal(t, ExitInconclusive, worseExit(ExitOK, ExitInconclusive))
	require.Equal(t, ExitInconclusive, worseExit(ExitInconclusive, ExitOK))
	require.Equal(t, ExitViolated, worseExit(ExitInconclusive, ExitViolated))
	require.Equal(t, ExitViolated, worseExit(ExitViolated, ExitInconclusive))

	// A campaign reads the same verdict from result.json.
	require.Equal(t, outInconclusive, outcomeOf(reports.RunResult{Inconclusive: true}))
	require.Equal(t, outFail, outcomeOf(reports.RunResult{}))
	require.Equal(t, outPass, outcomeOf(reports.RunResult{Passed: true}))
	require.Equal(t, outInterrupted, outcomeOf(reports.RunResult{Inconclusive: true, Meta: history.Meta{Interrupted: true}}))
}

// A matrix cell marks an inconclusive invariant apart from a violated or undecided one.
func TestMatrixWordsMarkInconclusive(t *testing.T) {
	t.Parallel()
	words := violatedWords(map[string]checker.Outcome{checker.InvFailover: checker.Inconclusive, checker.InvBalance: checker.Violated})
	require.Equal(t, []string{"failover>bound~", "imbalance"}, words)
}

// The matrix fails on a reference system's failed cell; an inconclusive one alone exits 3.
func TestMatrixCodeWeighsInconclusive(t *testing.T) {
	t.Parallel()
	inc := matrixCell{system: "reference", scenario: "gc-pause", runs: []matrixRun{{seed: 1, passed: true}, {seed: 2, inconclusive: true}}}
	require.Equal(t, ExitInconclusive, matrixCode([]matrixCell{inc}))
	baseline := matrixCell{system: "naive", scenario: "gc-pause", runs: []matrixRun{{seed: 1}}}
	require.Equal(t, ExitInconclusive, matrixCode([]matrixCell{inc, baseline}), "a baseline's failure is the matrix's expected output")
	failed := matrixCell{system: "reference", scenario: "crash-failover", runs: []matrixRun{{seed: 1}}}
	require.Equal(t, ExitViolated, matrixCode([]matrixCell{inc, failed}))
}

// An inconclusive run is no evidence: it never makes a baseline's cell an expected failure (nor a pass),
// and a characteristic cell that could not be judged makes the matrix inconclusive, not passed. The grid
// text, the cell's tooltip, the counts and the exit status say the same.
func TestMatrixInconclusiveRunIsNoExpectedFailure(t *testing.T) {
	t.Parallel()
	inc := matrixRun{seed: 2, dir: "d/2", inconclusive: true, words: []string{"failover>bound~"}}
	pass := matrixRun{seed: 1, passed: true}
	fail := matrixRun{seed: 1, dir: "d/1", words: []string{"double-poll"}}
	cell := func(system, scenario string, runs ...matrixRun) matrixCell {
		return matrixCell{system: system, scenario: scenario, runs: runs}
	}

	// A baseline's cell outside its characteristic ones: shown inconclusive, but the matrix expects
	// nothing of it, so the verdict is what the other cells make it.
	for _, c := range []matrixCell{cell("spec-naive", "balance-3x9", inc), cell("spec-naive", "balance-3x9", pass, inc)} {
		require.Equal(t, reports.MatrixInconclusive, c.status(), "%+v", c.runs)
		require.Contains(t, c.why(), "neither a pass nor an expected failure")
		require.Equal(t, ExitOK, matrixCode([]matrixCell{c}))
		require.Contains(t, matrixPlain([]matrixCell{c}, len(c.runs)), "0 expected failures, 0 unexpected, 1 inconclusive")
	}
	require.Equal(t, "failover>bound~", cell("spec-naive", "balance-3x9", inc).text(1))
	require.Equal(t, "0/2 failover>bound~ (1 inconclusive)", cell("spec-naive", "balance-3x9", pass, inc).text(2),
		"an inconclusive seed is not counted as a failed one")

	// A characteristic cell with no failing run and an inconclusive one: its flaw neither showed nor was
	// missed. Not expected, not unexpected, and the matrix is inconclusive.
	for _, c := range []matrixCell{cell("spec-naive", "gc-pause", inc), cell("spec-naive", "gc-pause", pass, inc)} {
		require.Equal(t, reports.MatrixInconclusive, c.status(), "%+v", c.runs)
		require.Contains(t, c.why(), "no run showed it")
		require.Equal(t, ExitInconclusive, matrixCode([]matrixCell{c}))
		require.NotEqual(t, "pass, but expected to fail", c.gridText(len(c.runs)))
		plain := matrixPlain([]matrixCell{c}, len(c.runs))
		require.Contains(t, plain, "matrix INCONCLUSIVE · 1 cells: 0 pass, 0 expected failures, 0 unexpected, 1 inconclusive")
		md := reports.MatrixMarkdown(matrixModel([]matrixCell{c}, len(c.runs), nil, nil, ""), false)
		require.True(t, strings.HasPrefix(md, "### ⏳ matrix: INCONCLUSIVE · 1 cell: 0 pass, 0 unexpected, 1 inconclusive"), md)
	}
	// A failing run is evidence: the flaw showed, whatever the other seeds were.
	c := cell("spec-naive", "gc-pause", fail, inc)
	require.Equal(t, reports.MatrixExpected, c.status())
	require.Equal(t, ExitOK, matrixCode([]matrixCell{c}))
	require.Equal(t, "1/2 double-poll failover>bound~ (1 inconclusive)", c.text(2))
	// Passing every judged seed is still a missed flaw.
	require.Equal(t, reports.MatrixUnexpected, cell("spec-naive", "gc-pause", pass).status())

	// The runs that did not pass say which were inconclusive.
	runs := failingRuns([]matrixCell{c}, "out")
	require.Contains(t, runs, "spec-naive / gc-pause seed 2: inconclusive (the harness ran too late to judge it): failover>bound~\n")
	require.Contains(t, runs, "spec-naive / gc-pause seed 1: double-poll\n")
	m := matrixModel([]matrixCell{c}, 2, nil, nil, "")
	require.Equal(t, "inconclusive (the harness ran too late to judge it): failover>bound~", m.Failing[1].What)

	// A reference system's inconclusive cell is inconclusive, as before; beside an unasserted one the
	// verdict is the reference's.
	ref := cell("reference", "gc-pause", pass, inc)
	require.Equal(t, reports.MatrixInconclusive, ref.status())
	require.Equal(t, ExitInconclusive, matrixCode([]matrixCell{ref, cell("spec-naive", "balance-3x9", inc)}))
}
