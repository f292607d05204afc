package reports

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// outsideRun is a shard's primary killed at 6 s, declared outside the assumptions: ep-0 and ep-1 go
// unpolled for 4.9 s (from the end of the poll at 5.6 s to the poll at 10.6 s), the other endpoints
// keep their pace, and the checker holds no takeover to a bound.
func outsideRun() Run {
	s, ms := time.Second, time.Millisecond
	var ev []history.Event
	add := func(e history.Event) { e.Seq = int64(len(ev) + 1); ev = append(ev, e) }
	add(history.Event{Kind: history.KindFault, At: 6 * s, End: 6*s + 2*ms,
		Fault: &history.Fault{ID: "f1", Name: "shard-primary-kill", Params: map[string]string{"slots": "0-5460"}}})
	for ep := range 4 {
		for at := 100 * ms; at < 15*s; at += 500 * ms {
			if ep < 2 && at > 6*s && at < 10500*ms {
				continue
			}
			add(history.Event{Kind: history.KindPoll, At: at, End: at + 100*ms, Instance: "a", Endpoint: fmt.Sprintf("ep-%d", ep),
				Poll: &history.Poll{Token: uint64(ep + 1), Outcome: history.PollOK}})
		}
	}
	history.Sort(ev)
	h := history.History{Meta: history.Meta{Scenario: "cluster-primary-kill", System: "reference", Kind: "lease",
		Backend: "Redis Cluster, 3 primaries and 3 replicas (cluster-node-timeout 1s)", Seed: 1, TimeScale: 0.1,
		Instances: 1, Endpoints: 4, LeaseTTL: 3 * s, FailoverBound: 3100 * ms, PollInterval: 500 * ms, Duration: 15 * s,
		Timing:      &history.Timing{PollDuration: 100 * ms},
		Assumptions: history.Assumptions{DriftBound: 0.01, Persistence: "none", Topology: "cluster", Outside: []string{"shard-primary-kill"}}},
		Events: ev}
	rep := checker.Report{Results: []checker.Result{
		{Invariant: checker.InvAssumptions, Outcome: checker.Pass, Message: "ok"},
		{Invariant: checker.InvFailover, Outcome: checker.Pass, Message: "1 shard fault: all within the bound"},
	}}
	return Run{History: h, Report: rep, Passed: true}
}

// A fault outside the assumptions gets a banner at the top of the page and in the summary: which
// endpoints went unpolled across it, for how long in run and spec time, and that the checker held them
// to no bound. The headline says the invariants held under the assumptions, not unconditionally.
func TestOutsideFaultBanner(t *testing.T) {
	r := outsideRun()
	dir := writeRun(t, r)
	page := checkReportPage(t, dir, r)
	banner := page.byID("outside")
	require.NotNil(t, banner, "a banner for the fault outside the assumptions")
	text := strings.Join(strings.Fields(banner.text.String()), " ")
	require.Contains(t, text, "f1 shard-primary-kill (at 6s) is declared outside reference's assumptions.")
	require.Contains(t, text, "2 endpoints (ep-0, ep-1) went unpolled for 4.9s (49s of spec time) across it")
	require.Contains(t, text, "the checker held none of them to a failover bound; inside the assumptions a takeover is due within 3.1s (31s of spec time)")
	require.Contains(t, page.byID("headline").text.String(), "under the system's assumptions")

	md := string(mustRead(t, filepath.Join(dir, FileSummary)))
	require.Contains(t, md, "> **Outside the assumptions:** f1 shard-primary-kill (at 6s)")

	// The banner comes before anything but the headline.
	html := string(mustRead(t, filepath.Join(dir, FileReport)))
	require.Less(t, strings.Index(html, `id="outside"`), strings.Index(html, `id="timeline"`))

	// Without the declaration there is no banner.
	r.History.Meta.Assumptions.Outside = nil
	require.Nil(t, checkReportPage(t, writeRun(t, r), r).byID("outside"))
}
