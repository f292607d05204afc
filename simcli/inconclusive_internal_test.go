package simcli

import (
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
