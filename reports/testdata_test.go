package reports

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the saved runs in testdata")

// savedRun is a small run with a double poll, kept in testdata as simrun leaves it (history.jsonl and
// result.json), so re-rendering a saved run is tested on files rather than on values in memory.
const savedRun = "testdata/double-poll"

func TestRerenderSavedRun(t *testing.T) {
	if *update {
		r := synthRun(synthConfig{instances: 3, endpoints: 6, dur: 20 * time.Second, ttl: 2 * time.Second, poll: 500 * time.Millisecond, seed: 11})
		tmp := t.TempDir()
		require.NoError(t, WriteRun(tmp, r))
		require.NoError(t, os.MkdirAll(savedRun, 0o755))
		for _, f := range []string{FileHistory, FileResult} {
			require.NoError(t, os.WriteFile(filepath.Join(savedRun, f), mustRead(t, filepath.Join(tmp, f)), 0o644))
		}
	}
	r, err := ReadRun(savedRun)
	require.NoError(t, err)
	require.Len(t, listedViolations(r.Report), 1)
	require.Equal(t, []string{"single-poller"}, r.Expected)
	dir := writeRun(t, r)
	page := checkReportPage(t, dir, r)
	require.Len(t, page.byID("V1").svg("zoom").byClass("hl"), 2, "both overlapping polls are outlined")
}
