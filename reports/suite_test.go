package reports

import (
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
)

func TestWriteSuite(t *testing.T) {
	root := t.TempDir()
	var entries []SuiteEntry
	for i, name := range []string{"crash-failover", "gc-pause", "redis partition"} {
		r := synthRun(synthConfig{instances: 3, endpoints: 6, dur: 10 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: uint64(i + 1)})
		r.History.Meta.Scenario = name
		r.History.Meta.Command = "simrun run " + name
		switch i {
		case 0: // passes: no violation, none expected
			r.Report.Results[1] = checker.Result{Invariant: checker.InvSinglePoller, Outcome: checker.Pass, Message: "one poller"}
			r.History.Meta.Expect = nil
		case 2: // fails: a violation nobody expected
			r.History.Meta.Expect = nil
		}
		r.Passed = Judge(r.Report, r.expect())
		rel := filepath.Join("runs", strings.ReplaceAll(name, " ", "_"))
		require.NoError(t, WriteRun(filepath.Join(root, rel), r))
		res, err := ReadResult(filepath.Join(root, rel))
		require.NoError(t, err)
		entries = append(entries, res.Entry(rel))
	}
	require.NoError(t, WriteSuite(root, "ci", entries))

	page := parsePage(t, filepath.Join(root, FileIndex))
	require.Equal(t, "FAILED", strings.TrimSpace(page.byID("verdict").text.String()))
	rows := page.byClass("run")
	require.Len(t, rows, 3)
	order := []int{2, 0, 1} // failures first, then in the given order
	for k, row := range rows {
		i := order[k]
		links := row.byName("a")
		require.NotEmpty(t, links)
		href := links[0].attrs["href"]
		require.False(t, filepath.IsAbs(href) || strings.Contains(href, ":"), "relative link %q", href)
		require.FileExists(t, filepath.Join(root, filepath.FromSlash(href)))
		require.Equal(t, entries[i].Meta.Scenario, strings.TrimSpace(links[0].text.String()))
		cells := row.all(func(n *node) bool { return n.name == "td" && n.attrs["title"] != "" })
		require.Len(t, cells, len(entries[i].Report.Results))
	}
	require.True(t, rows[0].hasClass("violated"))
	require.True(t, rows[1].hasClass("pass"))
	require.True(t, rows[2].hasClass("pass"), "an expected violation passes")

	md := string(mustRead(t, filepath.Join(root, FileSummary)))
	require.Contains(t, md, "### ❌ suite ci: FAILED · 2 of 3 scenarios passed")
	require.Contains(t, md, "[crash-failover](runs/crash-failover/report.html)")
	require.Contains(t, md, "```sh\nsimrun run redis partition\n```")

	var doc jSuites
	require.NoError(t, xml.Unmarshal(mustRead(t, filepath.Join(root, FileJUnit)), &doc))
	require.Len(t, doc.Suites, 3)
	require.Equal(t, 1, doc.Failures)
	require.Equal(t, 21, doc.Tests)
}

func TestSuiteEntryLinkEscapes(t *testing.T) {
	e := SuiteEntry{Dir: "./out/a b#1/"}
	require.Equal(t, "out/a%20b%231/report.html", e.link(FileReport))
}
