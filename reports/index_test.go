package reports

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An index over a campaign's runs names each run by scenario and seed, links a pruned run's
// result.json instead of its missing report, and leaves summary.md to the caller.
func TestWriteIndexOfPrunedRunsBySeed(t *testing.T) {
	root := t.TempDir()
	var entries []SuiteEntry
	for seed := int64(1); seed <= 2; seed++ {
		r := synthRun(synthConfig{instances: 3, endpoints: 6, dur: 10 * time.Second, ttl: time.Second, poll: 200 * time.Millisecond, seed: uint64(seed)})
		r.History.Meta.Scenario, r.History.Meta.Seed = "crash-failover", seed
		r.Passed = Judge(r.Report, r.expect())
		rel := fmt.Sprintf("crash-failover-%d", seed)
		dir := filepath.Join(root, rel)
		require.NoError(t, WriteRun(dir, r))
		res, err := ReadResult(dir)
		require.NoError(t, err)
		e := res.Entry(rel)
		if seed == 2 {
			for _, f := range []string{FileReport, FileSummary, FileHistory, FileLinearizability, FileJUnit} {
				_ = os.Remove(filepath.Join(dir, f))
			}
			e.Pruned = true
		}
		entries = append(entries, e)
	}
	require.NoError(t, WriteIndex(root, "ci", entries, IndexOptions{Title: "campaign abc", Notes: []string{"seeds 1-2"}, BySeed: true}))
	_, err := os.Stat(filepath.Join(root, FileSummary))
	require.True(t, os.IsNotExist(err), "summary.md is the caller's")

	page := parsePage(t, filepath.Join(root, FileIndex))
	require.Contains(t, page.text.String(), "campaign abc")
	require.Contains(t, page.text.String(), "seeds 1-2")
	for _, row := range page.byClass("run") {
		for _, a := range row.byName("a") {
			require.FileExists(t, filepath.Join(root, filepath.FromSlash(a.attrs["href"])), "every link leads to a file")
		}
		text := row.text.String()
		require.True(t, strings.Contains(text, "crash-failover seed 1") || strings.Contains(text, "crash-failover seed 2"), text)
	}

	var doc jSuites
	require.NoError(t, xml.Unmarshal(mustRead(t, filepath.Join(root, FileJUnit)), &doc))
	require.Equal(t, "campaign abc", doc.Name)
	require.Equal(t, "crash-failover seed 1", doc.Suites[0].Name)
	require.Equal(t, "crash-failover seed 2", doc.Suites[1].Name)
	require.NotEqual(t, doc.Suites[0].Cases[0].Classname, doc.Suites[1].Cases[0].Classname,
		"CI views must not fold one scenario's seeds into one test")
}
