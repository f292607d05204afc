package reports

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// verdictReport has one result of every kind, for a scenario that expects fencing and balance to be
// violated: balance is, fencing is not.
func verdictReport() checker.Report {
	return checker.Report{Results: []checker.Result{
		{Invariant: checker.InvAssumptions, Outcome: checker.Pass, Message: "ok"},
		{Invariant: checker.InvSinglePoller, Outcome: checker.Violated, Message: "two | pollers", Duration: 1500 * time.Millisecond,
			Violations: []checker.Violation{{At: time.Second, Endpoint: "e1", Instances: []string{"a", "b"}, Message: "overlap", ReachedResource: true}}, Truncated: 2},
		{Invariant: checker.InvLinearizable, Outcome: checker.Unknown, Message: "checker timed out"},
		{Invariant: checker.InvLiveness, Outcome: checker.Skipped, Message: "no steady window"},
		{Invariant: checker.InvBalance, Outcome: checker.Violated, Message: "unbalanced", Violations: []checker.Violation{{At: 2 * time.Second, Message: "a held 3"}}},
		{Invariant: checker.InvFencing, Outcome: checker.Pass, Message: "tokens increase"},
	}}
}

func TestJudge(t *testing.T) {
	pass := checker.Report{Results: []checker.Result{{Invariant: "a", Outcome: checker.Pass}, {Invariant: "b", Outcome: checker.Skipped}}}
	viol := checker.Report{Results: []checker.Result{{Invariant: "a", Outcome: checker.Pass}, {Invariant: "b", Outcome: checker.Violated}}}
	unk := checker.Report{Results: []checker.Result{{Invariant: "a", Outcome: checker.Unknown}}}
	for _, tc := range []struct {
		name   string
		rep    checker.Report
		expect []string
		want   bool
	}{
		{"all pass", pass, nil, true},
		{"violated", viol, nil, false},
		{"violation expected", viol, []string{"b"}, true},
		{"expected violation missing", pass, []string{"a"}, false},
		{"expected skipped is missing", pass, []string{"b"}, false},
		{"expected invariant never checked", pass, []string{"zzz"}, false},
		{"unknown never passes", unk, []string{"a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, Judge(tc.rep, Expect{Violated: tc.expect})) })
	}
	// An invariant the system does not promise is judged and shown, and the run passes whatever its
	// verdict; every other invariant still decides.
	require.True(t, Judge(viol, Expect{NotPromised: []string{"b"}}), "a violation of what is not promised")
	require.True(t, Judge(unk, Expect{NotPromised: []string{"a"}}), "an unknown verdict of what is not promised")
	require.False(t, Judge(viol, Expect{NotPromised: []string{"a"}}), "the promised b still decides")
	require.False(t, Judge(pass, Expect{Violated: []string{"a"}, NotPromised: []string{"a"}}), "an expected violation is expected even if not promised")
	st := statusOf(viol.Results[1], Expect{NotPromised: []string{"b"}})
	require.Equal(t, "not held, not promised", st.label())
	require.True(t, st.ok())
}

func TestJUnit(t *testing.T) {
	r := synthRun(synthConfig{instances: 2, endpoints: 3, dur: 5 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: 3})
	r.Report = verdictReport()
	r.Expected = []string{checker.InvBalance, checker.InvFencing}
	r.Passed = Judge(r.Report, Expect{Violated: r.Expected})
	require.False(t, r.Passed)
	dir := writeRun(t, r)
	parseXML(t, mustRead(t, filepath.Join(dir, FileJUnit))) // well-formed
	var doc jSuites
	require.NoError(t, xml.Unmarshal(mustRead(t, filepath.Join(dir, FileJUnit)), &doc))
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	require.Equal(t, r.History.Meta.Scenario, s.Name)
	require.Len(t, s.Cases, len(r.Report.Results))
	got := map[string]string{}
	for _, c := range s.Cases {
		require.Equal(t, "ci."+r.History.Meta.Scenario, c.Classname)
		switch {
		case c.Failure != nil:
			got[c.Name] = "failure:" + c.Failure.Type
		case c.Error != nil:
			got[c.Name] = "error"
		case c.Skipped != nil:
			got[c.Name] = "skipped"
		default:
			got[c.Name] = "ok"
		}
	}
	require.Equal(t, map[string]string{
		checker.InvAssumptions: "ok", checker.InvSinglePoller: "failure:violated", checker.InvLinearizable: "error",
		checker.InvLiveness: "skipped", checker.InvBalance: "ok", checker.InvFencing: "failure:expectation",
	}, got)
	require.Equal(t, 6, s.Tests)
	require.Equal(t, 2, s.Failures)
	require.Equal(t, 1, s.Errors)
	require.Equal(t, 1, s.Skipped)
	require.Equal(t, "1.500", s.Cases[1].Time)
	require.Contains(t, s.Cases[1].Failure.Body, "overlap")
	require.Contains(t, s.Cases[1].Failure.Body, r.History.Meta.Command)
	require.Equal(t, s.Tests, doc.Tests)
}

func TestSummaryMarkdown(t *testing.T) {
	r := synthRun(defaultSynth())
	r.Report.Results = append(r.Report.Results, verdictReport().Results...)
	dir := writeRun(t, r)
	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.Less(t, len(md), 8000, "fits a pull-request comment")
	require.Less(t, strings.Count(md, "\n"), 60)
	require.True(t, strings.HasPrefix(md, "### ✅ gc-pause: PASSED"))
	for _, res := range r.Report.Results {
		require.Contains(t, md, "| "+res.Invariant+" | ")
	}
	require.Contains(t, md, `two \| pollers`, "pipes in cells are escaped")
	require.Contains(t, md, "```sh\n"+r.History.Meta.Command+"\n```")
	require.Contains(t, md, "**Failover:** 32 takeovers after 3 faults")
	require.Contains(t, md, "| f1 crash |")
	require.Contains(t, md, "- V3 balance at 2s: a held 3")
	require.Contains(t, md, "- (2 more counted, not listed)")
}

func TestResultJSON(t *testing.T) {
	r := synthRun(defaultSynth())
	dir := writeRun(t, r)
	res, err := ReadResult(dir)
	require.NoError(t, err)
	require.Equal(t, ResultSchemaVersion, res.Schema)
	require.Equal(t, r.Passed, res.Passed)
	require.Equal(t, []string{checker.InvSinglePoller}, res.Expected)
	require.Equal(t, r.History.Meta.Seed, res.Seed)
	require.Equal(t, r.History.Meta.Command, res.Command)
	require.Equal(t, r.Report, res.Report)
	require.Len(t, res.Invariants, len(r.Report.Results))
	require.True(t, res.Invariants[1].Expected)
	require.True(t, res.Invariants[1].OK)
	require.Equal(t, 1, res.Invariants[1].Violations)
	require.Len(t, res.Failover, 3)
	require.Equal(t, "f1", res.Failover[0].FaultID)
	require.Equal(t, 10, res.Failover[0].Affected)
	require.Positive(t, res.Failover[0].P50)
	require.LessOrEqual(t, res.Failover[0].P50, res.Failover[0].Max)
	for _, f := range res.Files {
		require.FileExists(t, filepath.Join(dir, f))
	}

	// The raw document uses the documented field names.
	var raw map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, filepath.Join(dir, FileResult)), &raw))
	for _, k := range []string{"schema", "scenario", "system", "seed", "passed", "invariants", "failover", "meta", "report", "files"} {
		require.Contains(t, raw, k)
	}

	t.Run("newer schema refused", func(t *testing.T) {
		d := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(d, FileResult), []byte(`{"schema": 99}`), 0o644))
		_, err := ReadResult(d)
		require.ErrorIs(t, err, ErrSchema)
	})
	t.Run("missing", func(t *testing.T) {
		_, err := ReadResult(t.TempDir())
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

func TestHistoryAndReadRun(t *testing.T) {
	r := synthRun(synthConfig{instances: 3, endpoints: 5, dur: 8 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: 5})
	dir := writeRun(t, r)
	h, err := history.ReadFile(filepath.Join(dir, FileHistory))
	require.NoError(t, err)
	require.Equal(t, len(r.History.Events), len(h.Events))
	require.Equal(t, r.History.Meta.Command, h.Meta.Command)
	back, err := ReadRun(dir)
	require.NoError(t, err)
	require.Equal(t, r.Passed, back.Passed)
	require.Equal(t, r.Report, back.Report)
	require.Len(t, back.History.Events, len(r.History.Events))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
