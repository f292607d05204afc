package simcli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
)

func TestInconclusiveExitCodes(t *testing.T) {
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
