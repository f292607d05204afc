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
	"github.com/tenurelabs/tenure/history"
)

// inconclusiveRun is a run whose only finding, a takeover 80 ms over its bound, came while the canary
// timer woke 61 ms late: inconclusive, neither passed nor failed.
func inconclusiveRun() Run {
	r := synthRun(defaultSynth())
	r.History.Meta.Expect = nil
	s := time.Second
	r.History.Meta.Lag = &history.Lag{Window: 100 * time.Millisecond, Floor: 10 * time.Millisecond, Windows: 300,
		Canary:  history.LagSummary{Max: 61 * time.Millisecond, P99: 40 * time.Millisecond},
		Sched:   history.LagSummary{Max: 33 * time.Millisecond, P99: 20 * time.Millisecond},
		Ping:    history.LagSummary{Max: 12 * time.Millisecond, P99: 3 * time.Millisecond},
		Samples: []history.LagSample{{At: 8 * s, Canary: 61 * time.Millisecond, Sched: 33 * time.Millisecond}, {At: 15 * s, Ping: 12 * time.Millisecond}},
	}
	lag := checker.LagFinding{Max: 61 * time.Millisecond, At: 8 * s, Source: checker.LagCanary}
	r.Report.Results = []checker.Result{
		{Invariant: checker.InvAssumptions, Outcome: checker.Pass, Message: "ok"},
		{Invariant: checker.InvSinglePoller, Outcome: checker.Pass, Message: "no overlap"},
		{Invariant: checker.InvFailover, Outcome: checker.Inconclusive, Message: "inconclusive: 1 findings coincided with harness lag",
			Inconclusive: []checker.Violation{{At: 6 * s, Endpoint: "ep-001", Instances: []string{"a", "b"},
				Message: "crash on a: ep-001 was taken over by b after 3.18s, over the bound 3.1s",
				From:    6 * s, To: 9*s + 180*time.Millisecond, Over: 80 * time.Millisecond, Lag: &lag}}},
	}
	r.Passed = Judge(r.Report, Expect{})
	return r
}

func TestInconclusiveIsItsOwnStateInEveryOutput(t *testing.T) {
	r := inconclusiveRun()
	require.False(t, r.Passed)
	require.True(t, Inconclusive(r.Report, Expect{}))
	dir := writeRun(t, r)

	// result.json: not passed, inconclusive, the invariant's outcome and count, the lag in meta.
	var raw map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, FileResult)), &raw))
	require.Equal(t, false, raw["passed"])
	require.Equal(t, true, raw["inconclusive"])
	res, err := ReadResult(dir)
	require.NoError(t, err)
	require.True(t, res.Inconclusive)
	require.Equal(t, checker.Inconclusive, res.Invariants[2].Outcome)
	require.False(t, res.Invariants[2].OK)
	require.Equal(t, 1, res.Invariants[2].Inconclusive)
	require.Zero(t, res.Invariants[2].Violations)
	require.Equal(t, 61*time.Millisecond, res.Meta.Lag.Canary.Max)

	// report.html: its own badge and headline, a section with the lag, no violation marked, and the
	// harness's rows on the timeline with the spike above the threshold.
	page := checkReportPage(t, dir, r)
	require.True(t, page.byID("verdict").hasClass("inconclusive"))
	require.Contains(t, page.byID("headline").text.String(), "the worst: 61ms late, by the canary timer, at 8.000s")
	require.Nil(t, page.byID("violations"))
	require.Empty(t, page.byClass("vmark"))
	sec := page.byID("I1")
	require.NotNil(t, sec)
	require.True(t, sec.hasClass("inconclusive"))
	require.Contains(t, sec.text.String(), "harness lag 61ms (canary timer, at 8s)")
	overview := page.svg("overview")
	require.Len(t, overview.byClass("lag-row"), 2)
	require.Len(t, overview.byClass("over"), 1, "one window above the threshold")
	require.Len(t, overview.byClass("lag"), 2, "a bar for the harness's 61 ms, one for the ping's 12 ms")
	require.Contains(t, page.byClass("params")[0].text.String(), "canary timer max 61ms (p99 40ms)")

	// summary.md: its own verdict, the finding with its lag, the lag over the run.
	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.Contains(t, md, "### ⏳ ")
	require.Contains(t, md, "INCONCLUSIVE")
	require.Contains(t, md, "**Inconclusive (1):**")
	require.Contains(t, md, "harness lag 61ms (canary timer, at 8s)")
	require.Contains(t, md, "**Harness lag:** canary timer max 61ms")
	require.NotContains(t, md, "❌")

	// junit.xml: skipped with the lag, no failure, the suite's properties say so.
	var doc struct {
		Suites []jSuite `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(mustRead(t, filepath.Join(dir, FileJUnit)), &doc))
	su := doc.Suites[0]
	require.Zero(t, su.Failures)
	require.Zero(t, su.Errors)
	var skipped []string
	for _, c := range su.Cases {
		if c.Skipped != nil {
			skipped = append(skipped, c.Name+": "+c.Skipped.Message)
		}
	}
	require.Len(t, skipped, 1)
	require.True(t, strings.HasPrefix(skipped[0], "failover: inconclusive: harness lag 61ms"), skipped[0])
	require.Contains(t, su.Properties, jProperty{"inconclusive", "true"})
	require.Contains(t, su.Properties, jProperty{"harness_lag_max", "61ms"})
}

func TestSuiteShowsInconclusiveApart(t *testing.T) {
	inc := inconclusiveRun()
	pass := caughtRun()
	dir := t.TempDir()
	entries := []SuiteEntry{
		{Dir: "pass", Meta: pass.History.Meta, Report: pass.Report, Passed: true},
		{Dir: "inc", Meta: inc.History.Meta, Report: inc.Report, Passed: false},
	}
	require.NoError(t, WriteSuite(dir, "ci", entries))
	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.Contains(t, md, "### ⏳ suite ci: INCONCLUSIVE · 1 of 2 scenarios passed, 1 inconclusive")
	index := string(mustRead(t, filepath.Join(dir, FileIndex)))
	require.Contains(t, index, ">INCONCLUSIVE<")
	require.Contains(t, index, "inconclusive (harness lag 61ms)")

	// A failure anywhere fails the suite.
	fail := inconclusiveRun()
	fail.Report.Results[1].Outcome = checker.Violated
	entries = append(entries, SuiteEntry{Dir: "fail", Meta: fail.History.Meta, Report: fail.Report})
	require.NoError(t, WriteSuite(dir, "ci", entries))
	require.Contains(t, string(mustRead(t, filepath.Join(dir, FileIndex))), ">FAILED<")
	require.False(t, Inconclusive(fail.Report, Expect{}), "a run with a violation fails, whatever else was inconclusive")
}

// A backend ping that was out during a fault of the backend is drawn, but not as lag over the
// threshold: the checker does not count it either.
func TestLagRowsLeaveBackendFaultPingsOut(t *testing.T) {
	m := &model{meta: history.Meta{Lag: &history.Lag{Window: 100 * time.Millisecond, Floor: 10 * time.Millisecond,
		Samples: []history.LagSample{{At: 2 * time.Second, Ping: 200 * time.Millisecond}, {At: 5 * time.Second, Ping: 200 * time.Millisecond}}}},
		faults: []faultInfo{{id: "f1", name: "redis-restart", at: 1900 * time.Millisecond, end: 2100 * time.Millisecond}}}
	var c canvas
	drawLagRows(&c, m, newTimeAxis(0, 10*time.Second), 0)
	svg := c.b.String()
	require.Equal(t, 2, strings.Count(svg, `<rect class="lag`), svg)
	require.Equal(t, 1, strings.Count(svg, `class="lag over"`), "only the ping outside the fault")
	require.Contains(t, svg, "during a fault of the backend")
}
