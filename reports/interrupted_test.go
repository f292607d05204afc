package reports

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An interrupted run has no verdict: every output says INTERRUPTED, never FAILED or PASSED, and says
// what its partial history showed all the same.
func TestInterruptedIsItsOwnBadgeInEveryOutput(t *testing.T) {
	r := synthRun(defaultSynth()) // holds a double poll: the partial history shows violations
	r.History.Meta.Interrupted = true
	r.Passed = false
	dir := writeRun(t, r)

	page := checkReportPage(t, dir, r)
	badge := page.byID("verdict")
	require.True(t, badge.hasClass("interrupted"))
	require.Equal(t, "INTERRUPTED", strings.TrimSpace(badge.text.String()))
	head := page.byID("headline").text.String()
	require.Contains(t, head, "no verdict is drawn from it")
	require.Contains(t, head, "already shows")
	require.Contains(t, head, r.History.Meta.Command)
	require.NotContains(t, string(mustRead(t, filepath.Join(dir, FileReport))), "FAILED")

	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.True(t, strings.HasPrefix(md, "### ⏸️ gc-pause: INTERRUPTED\n"), md[:80])
	require.NotContains(t, md, "FAILED")

	var raw map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, FileResult)), &raw))
	require.Equal(t, true, raw["interrupted"])

	// A suite with an interrupted run is interrupted, as simrun's exit status says.
	passing := synthRun(defaultSynth())
	passing.Report.Results = nil
	passing.Passed = true
	suite := t.TempDir()
	entries := []SuiteEntry{
		{Dir: "a", Meta: r.History.Meta, Report: r.Report, Passed: false},
		{Dir: "b", Meta: passing.History.Meta, Report: passing.Report, Passed: true},
	}
	require.NoError(t, WriteSuite(suite, "ci", entries))
	idx := parsePage(t, filepath.Join(suite, FileIndex))
	require.True(t, idx.byID("verdict").hasClass("interrupted"))
	rows := idx.byClass("run")
	require.True(t, rows[0].hasClass("interrupted"), "the interrupted run comes first, marked as such")
	smd := string(mustRead(t, filepath.Join(suite, FileSummary)))
	require.Contains(t, smd, "### ⏸️ suite ci: INTERRUPTED · 1 of 2 scenarios passed, 1 interrupted")
}
