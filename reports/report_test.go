package reports

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// marked counts the violations marked in a chart: diamonds of the given class plus what each density
// band stands for.
func marked(n *node, class string) int {
	total := len(n.byClass(class))
	for _, b := range n.byClass("vband") {
		var k int
		if _, err := fmt.Sscan(b.attrs["data-count"], &k); err == nil {
			total += k
		}
	}
	return total
}

// writeRun writes r into a fresh directory and returns it.
func writeRun(t *testing.T, r Run) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, WriteRun(dir, r))
	return dir
}

func listedViolations(rep checker.Report) []checker.Violation {
	var out []checker.Violation
	for _, r := range rep.Results {
		out = append(out, r.Violations...)
	}
	return out
}

func faultCount(h history.History) int {
	n := 0
	for _, e := range h.Events {
		if e.Kind == history.KindFault {
			n++
		}
	}
	return n
}

// checkReportPage asserts that report.html is well-formed, self-contained and consistent with the run.
func checkReportPage(t *testing.T, dir string, r Run) *node {
	t.Helper()
	page := parsePage(t, filepath.Join(dir, FileReport))
	m := buildModel(r)
	viols := listedViolations(r.Report)
	faults := faultCount(r.History)

	// Self-contained: no scripts, no external sources, links only to anchors and sibling files.
	require.Empty(t, page.byName("script"))
	require.Empty(t, page.all(func(n *node) bool { _, ok := n.attrs["src"]; return ok }))
	for _, a := range page.byName("a") {
		href := a.attrs["href"]
		require.False(t, strings.Contains(href, ":") || strings.HasPrefix(href, "/"), "non-local link %q", href)
	}
	require.Empty(t, page.byName("link"))

	// Verdict, parameters and the replay command.
	verdict := page.byID("verdict")
	require.NotNil(t, verdict)
	want := map[bool]string{true: "PASSED", false: "FAILED"}[r.Passed]
	if !r.Passed && Inconclusive(r.Report, r.expect()) {
		want = "INCONCLUSIVE"
	}
	if r.History.Meta.Interrupted {
		want = "INTERRUPTED"
	}
	require.Equal(t, want, strings.TrimSpace(verdict.text.String()))
	if r.History.Meta.Command != "" {
		require.Equal(t, r.History.Meta.Command, strings.TrimSpace(page.byID("replay").text.String()))
	}
	require.Contains(t, page.byClass("params")[0].text.String(), fmt.Sprint(r.History.Meta.Seed))

	// One row per invariant, with the verdict after expectations.
	rows := page.byClass("result")
	require.Len(t, rows, len(r.Report.Results))
	for i, res := range r.Report.Results {
		require.Equal(t, res.Invariant, rows[i].attrs["data-invariant"])
		require.True(t, rows[i].hasClass(statusOf(res, r.expect()).class()), "row %s", res.Invariant)
		require.Contains(t, rows[i].text.String(), m.humanize(res.Message))
	}

	// The overview: one row per instance, one row per endpoint (or group), one shade per fault, and
	// exactly one marker per listed violation.
	ov := page.svg("overview")
	require.NotNil(t, ov)
	require.Len(t, ov.byClass("inst-row"), len(m.insts))
	if len(m.eps) <= smallFleetEndpoints {
		require.Len(t, ov.byClass("ep-detail"), len(m.eps))
	} else {
		require.Len(t, ov.byClass("ep-row"), len(m.compactRows()))
		covered := 0
		for _, row := range ov.byClass("ep-row") {
			var n int
			_, err := fmt.Sscan(row.attrs["data-endpoints"], &n)
			require.NoError(t, err)
			covered += n
		}
		require.Equal(t, len(m.eps), covered)
	}
	require.Len(t, ov.byClass("fault"), faults)
	if faults <= maxFaultLanes {
		require.Len(t, ov.byClass("fault-label"), faults)
	} else {
		require.LessOrEqual(t, len(ov.byClass("fault-label")), faults)
	}
	require.Equal(t, len(viols), marked(ov, "vmark"), "every violation is marked once in the overview")
	require.Len(t, page.byClass("vmark"), len(ov.byClass("vmark")), "markers outside the overview")

	// Detail: only when the fleet is large; markers for the violations on the endpoints it shows.
	if det := page.svg("detail"); det != nil {
		require.Greater(t, len(m.eps), smallFleetEndpoints)
		shown := map[string]bool{}
		for _, b := range det.byClass("ep-detail") {
			shown[b.attrs["data-endpoint"]] = true
		}
		want, distinct := 0, map[string]bool{}
		for _, v := range viols {
			if v.Endpoint != "" && !distinct[v.Endpoint] {
				distinct[v.Endpoint] = true
				// Endpoints with violations come first, in order of their first violation.
				require.Equal(t, len(distinct) <= maxDetailEndpoints, shown[v.Endpoint], "endpoint %s", v.Endpoint)
			}
			if shown[v.Endpoint] {
				want++
			}
		}
		require.Equal(t, want, marked(det, "vmark-detail"))
		require.Len(t, det.byClass("fault"), faults)
		takeovers := 0
		for _, f := range r.Report.Failovers {
			if shown[f.Endpoint] {
				takeovers++
			}
		}
		require.Len(t, det.byClass("takeover"), takeovers)
	}

	// Failover table: one row per fault with takeovers, and every takeover in the full list.
	faultIDs := map[string]bool{}
	for _, f := range r.Report.Failovers {
		faultIDs[f.FaultID] = true
	}
	require.Len(t, page.byClass("fo-group"), len(faultIDs))
	require.Len(t, page.byClass("fo"), len(r.Report.Failovers))

	// Charts share the fault shading.
	if len(r.Report.Balance) > 0 {
		bal := page.svg("balance")
		require.NotNil(t, bal)
		require.Len(t, bal.byClass("ideal"), 1)
		require.Len(t, bal.byClass("fault"), faults)
		require.NotEmpty(t, bal.byClass("series"))
	}
	if r.Report.Ops > 0 {
		ops := page.svg("ops")
		require.NotNil(t, ops)
		require.Len(t, ops.byClass("ops-row"), len(m.insts))
		require.Len(t, ops.byClass("fault"), faults)
	}

	// The diagnosis names every group; each violation has a card (the first few of its group, with its
	// excerpt and a zoomed timeline) or a row in its group's table.
	if len(viols) > 0 && !r.Passed {
		diag := page.byID("diagnosis")
		require.NotNil(t, diag)
		require.Len(t, diag.byName("li"), len(m.diag))
	} else {
		require.Nil(t, page.byID("diagnosis"))
	}
	require.Len(t, page.byClass("vgroup"), len(m.diag))
	cards := 0
	zooms := 0
	for i, v := range viols {
		s := page.byID(fmt.Sprintf("V%d", i+1))
		require.NotNil(t, s, "V%d", i+1)
		require.Contains(t, s.text.String(), m.humanize(v.Message))
		if !s.hasClass("viol") {
			require.True(t, s.hasClass("viol-row"), "V%d is a card or a row", i+1)
			continue
		}
		cards++
		named, drawn := 0, 0 // named events found; those of them the zoom draws (polls and operations on the endpoint)
		for _, seq := range v.Events {
			if k, ok := m.bySeq[seq]; ok {
				named++
				if e := m.ev[k]; e.Endpoint == v.Endpoint && e.Instance != "" && (e.Poll != nil || e.Op != nil) {
					drawn++
				}
			}
		}
		require.Len(t, s.byClass("named"), named, "V%d excerpt", i+1)
		if v.Endpoint != "" && cards <= maxZooms {
			z := s.svg("zoom")
			require.NotNil(t, z, "V%d zoom", i+1)
			require.Len(t, z.byClass("vmark-zoom"), 1)
			require.Len(t, z.byClass("hl"), drawn)
			zooms++
		}
	}
	require.Len(t, page.byClass("viol"), cards)
	require.LessOrEqual(t, cards, min(maxExcerpts, maxCardsPerGroup*len(m.diag)))
	if len(viols) > 0 {
		require.Positive(t, cards)
	}
	require.Len(t, page.svgs("zoom"), zooms)
	return page
}

func TestWriteRunLargeFleet(t *testing.T) {
	r := synthRun(defaultSynth())
	dir := writeRun(t, r)
	page := checkReportPage(t, dir, r)
	for _, f := range []string{FileReport, FileSummary, FileResult, FileJUnit, FileHistory} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	require.NoFileExists(t, filepath.Join(dir, FileLinearizability))
	// The double poll is drawn: the victim's row is labelled as hot, and its zoom shows two lanes.
	v := listedViolations(r.Report)[0]
	hot := page.svg("overview").byClass("hot")
	require.Len(t, hot, 1)
	require.Equal(t, v.Endpoint, hot[0].text.String())
	require.Len(t, page.byID("V1").svg("zoom").byClass("row-bg"), 2)
	require.Len(t, page.svg("detail").byClass("ep-detail"), maxDetailEndpoints)
}

func TestWriteRunSmallFleet(t *testing.T) {
	cfg := defaultSynth()
	cfg.instances, cfg.endpoints, cfg.dur = 3, 6, 20*time.Second
	r := synthRun(cfg)
	r.Passed = false
	dir := writeRun(t, r)
	page := checkReportPage(t, dir, r)
	require.Nil(t, page.svg("detail"), "a small fleet is drawn in detail in the overview")
}

func TestWriteRunGroupsManyEndpoints(t *testing.T) {
	cfg := defaultSynth()
	cfg.instances, cfg.endpoints, cfg.dur = 20, 1000, 20*time.Second
	r := synthRun(cfg)
	dir := writeRun(t, r)
	page := checkReportPage(t, dir, r)
	require.Len(t, page.svg("overview").byClass("ep-row"), 100)
}

func TestWriteRunUnusualHistories(t *testing.T) {
	meta := history.Meta{Scenario: "odd", System: "x", Duration: 10 * time.Second, Command: "simrun run odd --seed 1"}
	cases := map[string]Run{
		"empty": {History: history.History{Meta: history.Meta{Scenario: "empty"}}},
		// No beliefs: holdings come from polls. An operation that never returned. A violation on no
		// endpoint, one naming unknown events, and an unknown verdict.
		"no beliefs": {
			History: history.History{Meta: meta, Events: []history.Event{
				{Seq: 1, Kind: history.KindPoll, At: time.Second, End: time.Second + 10*time.Millisecond, Instance: "a", Endpoint: "e1", Poll: &history.Poll{Outcome: history.PollOK}},
				{Seq: 2, Kind: history.KindPoll, At: 2 * time.Second, End: 2*time.Second + 10*time.Millisecond, Instance: "b", Endpoint: "e1", Poll: &history.Poll{Outcome: history.PollRefused, Token: 1, MaxToken: 2}},
				{Seq: 3, Kind: history.KindOp, At: 3 * time.Second, End: history.Infinity, Instance: "a", Endpoint: "e1", Op: &history.Op{Kind: history.OpRenew, Key: "k", Unknown: true}},
				{Seq: 4, Kind: history.KindFault, At: 4 * time.Second, End: history.Infinity, Fault: &history.Fault{ID: "f1", Name: "redis-restart", Wipes: true}},
			}},
			Report: checker.Report{Results: []checker.Result{
				{Invariant: checker.InvBalance, Outcome: checker.Violated, Message: "unbalanced <&>", Violations: []checker.Violation{{At: 5 * time.Second, Message: "a held 2"}}},
				{Invariant: checker.InvStalePoll, Outcome: checker.Violated, Violations: []checker.Violation{{At: 2 * time.Second, Endpoint: "e1", Events: []int64{2, 99}, Message: "refused"}}, Truncated: 3},
				{Invariant: checker.InvLinearizable, Outcome: checker.Unknown, Message: "timed out"},
			}, Ops: 1, Polls: 2, Refused: 1},
		},
	}
	many := synthRun(defaultSynth())
	var vs []checker.Violation
	for i := range 150 {
		ep := fmt.Sprintf("ep-%03d", i%100+1)
		vs = append(vs, checker.Violation{At: time.Duration(i) * 300 * time.Millisecond, Endpoint: ep, Message: "late",
			Events: []int64{int64(i*97 + 1)}})
	}
	many.Report.Results[3] = checker.Result{Invariant: checker.InvFailover, Outcome: checker.Violated, Message: "slow", Violations: vs, Truncated: 40}
	cases["many violations"] = many
	nemesis := synthRun(defaultSynth())
	for i := range 40 {
		at := time.Duration(i) * 1400 * time.Millisecond
		nemesis.History.Events = append(nemesis.History.Events, history.Event{Seq: int64(900000 + i), Kind: history.KindFault,
			At: at, End: at + 900*time.Millisecond, Fault: &history.Fault{ID: fmt.Sprintf("n%d", i), Name: "latency",
				Targets: []string{"someone-else"}, Params: map[string]string{"latency": "200ms"}}})
	}
	history.Sort(nemesis.History.Events)
	cases["many faults"] = nemesis
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeRun(t, r)
			checkReportPage(t, dir, r)
		})
	}
}

func TestWriteRunLinearizability(t *testing.T) {
	r := synthRun(synthConfig{instances: 3, endpoints: 4, dur: 10 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: 1})
	t.Run("written and linked", func(t *testing.T) {
		r := r
		r.Linearizability = func(w io.Writer) error { _, err := io.WriteString(w, "<html>viz</html>"); return err }
		dir := writeRun(t, r)
		b, err := os.ReadFile(filepath.Join(dir, FileLinearizability))
		require.NoError(t, err)
		require.Equal(t, "<html>viz</html>", string(b))
		page := parsePage(t, filepath.Join(dir, FileReport))
		require.NotEmpty(t, page.all(func(n *node) bool { return n.name == "a" && n.attrs["href"] == FileLinearizability }))
	})
	t.Run("failure reported", func(t *testing.T) {
		r := r
		boom := errors.New("boom")
		r.Linearizability = func(io.Writer) error { return boom }
		dir := t.TempDir()
		err := WriteRun(dir, r)
		require.ErrorIs(t, err, boom)
		b, rerr := os.ReadFile(filepath.Join(dir, FileLinearizability))
		require.NoError(t, rerr)
		require.Contains(t, string(b), "boom")
		require.FileExists(t, filepath.Join(dir, FileReport), "other files are still written")
	})
	t.Run("no directory", func(t *testing.T) {
		require.ErrorIs(t, WriteRun("", r), ErrNoDir)
	})
}

func TestWriteRunIsDeterministic(t *testing.T) {
	r := synthRun(defaultSynth())
	a, b := writeRun(t, r), writeRun(t, r)
	for _, f := range []string{FileReport, FileSummary, FileResult, FileJUnit, FileHistory} {
		require.Equal(t, mustRead(t, filepath.Join(a, f)), mustRead(t, filepath.Join(b, f)), f)
	}
}

// A promotion of a replicated backend is drawn on the overview, labelled with the nodes.
func TestWriteRunDrawsPromotions(t *testing.T) {
	cfg := defaultSynth()
	cfg.instances, cfg.endpoints, cfg.dur = 3, 6, 20*time.Second
	r := synthRun(cfg)
	seq := int64(len(r.History.Events) + 1)
	r.History.Events = append(r.History.Events, history.Event{Seq: seq, Kind: history.KindNote, At: 7 * time.Second,
		Note: history.NotePromotion + "redis-0 -> redis-1"})
	dir := writeRun(t, r)
	page := checkReportPage(t, dir, r)
	labels := page.svg("overview").byClass("promotion-label")
	require.Len(t, labels, 1)
	require.Equal(t, "promoted redis-0 -> redis-1", labels[0].text.String())
	require.Len(t, page.svg("overview").byClass("promotion"), 1)
}
