package reports

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
)

// caughtRun is a passing run whose stale polls were refused by fencing and whose belief overlap came
// from a fault outside the system's assumptions: caught, safe, and never a violation.
func caughtRun() Run {
	r := synthRun(defaultSynth())
	r.History.Meta.Expect = nil
	var refusals []checker.Violation
	for i := range 3 {
		refusals = append(refusals, checker.Violation{At: time.Duration(10+i) * time.Second, Endpoint: "ep-001",
			Instances: []string{"a"}, Message: "stale poll by a refused", Outside: []string{"f1 pause"}})
	}
	r.Report.Results = []checker.Result{
		{Invariant: checker.InvAssumptions, Outcome: checker.Pass, Message: "ok"},
		{Invariant: checker.InvSingleHolder, Outcome: checker.Caught, Message: "1 overlap caught",
			Caught: []checker.Violation{{At: 9 * time.Second, Endpoint: "ep-001", Instances: []string{"a", "b"},
				Message: "a and b both believed", Outside: []string{"f1 pause"}}}},
		{Invariant: checker.InvSinglePoller, Outcome: checker.Pass, Message: "no overlap"},
		{Invariant: checker.InvStalePoll, Outcome: checker.Caught, Message: "3 stale polls caught", Caught: refusals, CaughtTruncated: 2},
	}
	r.Report.Refused = 5
	r.Passed = Judge(r.Report, Expect{})
	return r
}

func TestCaughtIsSafeInEveryOutput(t *testing.T) {
	r := caughtRun()
	require.True(t, r.Passed, "caught findings let the run pass")
	dir := writeRun(t, r)

	// result.json: caught findings are counted apart, never as violations.
	var raw map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, FileResult)), &raw))
	require.EqualValues(t, ResultSchemaVersion, raw["schema"])
	require.EqualValues(t, 5, raw["refused_stale"])
	require.EqualValues(t, 6, raw["caught"])
	res, err := ReadResult(dir)
	require.NoError(t, err)
	require.True(t, res.Passed)
	for _, inv := range res.Invariants {
		require.Zero(t, inv.Violations, inv.Invariant)
		require.True(t, inv.OK, inv.Invariant)
	}
	require.Equal(t, 5, res.Invariants[3].Caught)
	require.Equal(t, checker.Caught, res.Invariants[3].Outcome)

	// report.html: no violation section or marker; a safe section with each caught finding.
	page := checkReportPage(t, dir, r)
	require.Nil(t, page.byID("violations"))
	require.Empty(t, page.byClass("vmark"))
	require.NotNil(t, page.byID("caught"))
	for _, id := range []string{"C1", "C2", "C3", "C4"} {
		sec := page.byID(id)
		require.NotNil(t, sec, id)
		require.True(t, sec.hasClass("caught"), id)
		require.False(t, sec.hasClass("violated"), id)
	}
	for _, row := range page.byClass("result") {
		require.False(t, row.hasClass("violated"), row.attrs["data-invariant"])
	}

	// summary.md: a caught section, no violations.
	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.Contains(t, md, "### ✅")
	require.Contains(t, md, "**Caught (safe, 6):**")
	require.Contains(t, md, "5 polls were refused by fencing")
	require.NotContains(t, md, "**Violations:**")
	require.NotContains(t, md, "❌")

	// junit.xml: caught verdicts pass and say so.
	var doc struct {
		Suites []jSuite `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(mustRead(t, filepath.Join(dir, FileJUnit)), &doc))
	s := doc.Suites[0]
	require.Zero(t, s.Failures)
	require.Zero(t, s.Errors)
	var caught int
	for _, c := range s.Cases {
		require.Nil(t, c.Failure, c.Name)
		if strings.HasPrefix(c.SystemOut, "caught (safe)") {
			caught++
		}
	}
	require.Equal(t, 2, caught)
}

// A result.json of the first version listed refused polls among single-poller's violations; they are
// shown as caught, not as violations.
func TestLegacyRefusalsRenderAsCaught(t *testing.T) {
	r := caughtRun()
	r.Report.Results = []checker.Result{
		{Invariant: checker.InvSinglePoller, Outcome: checker.Pass, Message: "no overlap; 1 stale poll refused by fencing (safe)",
			Violations: []checker.Violation{{At: time.Second, Endpoint: "ep-001", Instances: []string{"a"}, Message: "stale poll refused"}}},
	}
	m := buildModel(r)
	require.Empty(t, m.viols)
	require.Len(t, m.caught, 1)
	require.Len(t, r.Report.Results[0].Violations, 1, "the caller's report is left as it is")
}

func TestSuiteShowsCaughtApart(t *testing.T) {
	r := caughtRun()
	row := suiteRowOf(SuiteEntry{Dir: "run", Meta: r.History.Meta, Report: r.Report, Passed: r.Passed},
		[]string{checker.InvSinglePoller, checker.InvStalePoll})
	require.Equal(t, "pass", row.Class)
	require.Equal(t, "pass", row.Cells[0].Class)
	require.Equal(t, "caught", row.Cells[1].Class)
	require.Equal(t, "caught (safe) (5)", row.Cells[1].Text)
	require.Equal(t, "🛡️ (caught)", cellIcon(row.Cells[1].Class))
}
