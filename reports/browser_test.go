package reports

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// findBrowser returns a headless-capable Chromium, or skips the test (fails it when
// TENURE_REQUIRE_BROWSER=1).
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("TENURE_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium found and TENURE_REQUIRE_BROWSER=1: install it (Debian: apt-get install -y chromium)")
	}
	t.Skip("no chromium found; set TENURE_REQUIRE_BROWSER=1 to make this a failure")
	return ""
}

// runBrowser runs headless Chromium with args and returns what it printed on stdout. It fails the test
// on a timeout, a non-zero exit or a page error in the browser's log.
func runBrowser(t *testing.T, browser, profile string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--hide-scrollbars",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	// Chromium forks helpers: run it in its own process group and kill the whole group on timeout or
	// when the test ends, so nothing outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Output goes to files, not pipes: a helper that outlives the browser cannot hold Wait up.
	logPath, outPath := filepath.Join(t.TempDir(), "chromium.log"), filepath.Join(t.TempDir(), "stdout")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	outFile, err := os.Create(outPath)
	require.NoError(t, err)
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, logFile
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	stderr := bytes.NewBuffer(mustRead(t, logPath))
	require.NoError(t, ctx.Err(), "chromium did not finish in time:\n%s", stderr.String())
	require.NoError(t, err, "chromium failed:\n%s", stderr.String())
	for _, line := range strings.Split(stderr.String(), "\n") {
		for _, bad := range []string{":CONSOLE", "net::ERR_", "Failed to load", "Uncaught"} {
			require.NotContains(t, line, bad, "browser reported an error")
		}
	}
	return mustRead(t, outPath)
}

// TestBrowserScreenshot renders the report of a 10 × 100 run with a crash, a partition and a double
// poll in headless Chromium and fails on a browser error or an unusable picture. The screenshot, the
// report and its summary are kept in TENURE_SCREENSHOT_DIR when that is set (for CI artifacts).
func TestBrowserScreenshot(t *testing.T) {
	browser := findBrowser(t)
	dir := writeRun(t, synthRun(defaultSynth()))
	shot := filepath.Join(t.TempDir(), "report.png")
	profile := t.TempDir()

	runBrowser(t, browser, profile, "--screenshot="+shot, "--window-size=1400,2400", "file://"+filepath.Join(dir, FileReport))
	f, err := os.Open(shot)
	require.NoError(t, err, "no screenshot written")
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 1400, img.Bounds().Dx())
	require.Equal(t, 2400, img.Bounds().Dy())
	colours := map[uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[(r>>11)<<10|(g>>11)<<5|b>>11] = true
		}
	}
	require.Greater(t, len(colours), 30, "the screenshot looks blank")

	if out := os.Getenv("TENURE_SCREENSHOT_DIR"); out != "" { // keep the picture and the report it shows
		require.NoError(t, os.MkdirAll(out, 0o755))
		for src, dst := range map[string]string{shot: "report.png", filepath.Join(dir, FileReport): "report.html", filepath.Join(dir, FileSummary): "summary.md"} {
			require.NoError(t, os.WriteFile(filepath.Join(out, dst), mustRead(t, src), 0o644))
		}
	}
}

// naiveRun is the history of `simrun run redis-partition --system naive --seed 1 --redis server`: i0 is cut
// off from Redis, i1 takes its endpoints over, and i0 polls them to the end of the run.
const naiveRun = "testdata/redis-partition-naive"

// failingNaiveReport checks the saved naive history as simrun does and writes its report.
func failingNaiveReport(t *testing.T) (string, Run) {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(naiveRun, FileHistory))
	require.NoError(t, err)
	opts := checker.DefaultOptions()
	opts.MaxViolations = MaxListedViolations
	rep := checker.Check(h, opts)
	r := Run{History: h, Report: rep, Passed: Judge(rep, ExpectOf(h.Meta)),
		Linearizability: func(w io.Writer) error { return checker.VisualizeLinearizability(w, h, opts) }}
	require.False(t, r.Passed)
	return writeRun(t, r), r
}

// TestFailingReportFirstScreen renders the failing naive run at 1,400 × 900 and requires its diagnosis
// and its whole timeline within that first screen: by the page's own layout (measured in the browser on
// a copy of the page with a measuring script) and in the screenshot (the diagnosis box's red edge).
func TestFailingReportFirstScreen(t *testing.T) {
	browser := findBrowser(t)
	dir, _ := failingNaiveReport(t)

	// Layout: a copy of the page that writes the positions of the diagnosis and the timeline into itself.
	measure := filepath.Join(dir, "measure.html")
	src := string(mustRead(t, filepath.Join(dir, FileReport)))
	script := `<script>(function(){var d=document.getElementById("diagnosis").getBoundingClientRect();` +
		`var o=document.querySelector('svg[data-view="overview"]').getBoundingClientRect();` +
		`var p=document.createElement("pre");p.id="layout";p.textContent="layout "+[d.top,d.bottom,o.top,o.bottom,o.right,innerWidth,innerHeight].map(Math.round).join(" ");` +
		`document.body.appendChild(p);})();</script>`
	require.True(t, strings.Contains(src, "</body>"))
	require.NoError(t, os.WriteFile(measure, []byte(strings.Replace(src, "</body>", script+"</body>", 1)), 0o644))
	dom := string(runBrowser(t, browser, t.TempDir(), "--window-size=1400,900", "--dump-dom", "file://"+measure))
	const mark = `<pre id="layout">layout `
	i := strings.Index(dom, mark)
	require.GreaterOrEqual(t, i, 0, "the measuring script did not run")
	var dTop, dBottom, oTop, oBottom, oRight, w, h int
	_, err := fmt.Sscan(dom[i+len(mark):], &dTop, &dBottom, &oTop, &oBottom, &oRight, &w, &h)
	require.NoError(t, err)
	t.Logf("viewport %d × %d: diagnosis %d–%d px, timeline %d–%d px", w, h, dTop, dBottom, oTop, oBottom)
	require.Equal(t, 1400, w) // the height differs without --screenshot; positions from the top do not
	require.Less(t, dTop, dBottom)
	require.LessOrEqual(t, dBottom, oTop, "the diagnosis comes before the timeline")
	require.LessOrEqual(t, oBottom, 900, "the timeline ends below the first screen")
	require.LessOrEqual(t, oRight, w, "the timeline is wider than the screen")

	// The screenshot: the diagnosis box's red left edge is drawn in the first screen.
	shot := filepath.Join(t.TempDir(), "first-screen.png")
	runBrowser(t, browser, t.TempDir(), "--screenshot="+shot, "--window-size=1400,900", "file://"+filepath.Join(dir, FileReport))
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, 900, img.Bounds().Dy())
	edge := 0
	for y := 60; y < img.Bounds().Dy(); y++ {
		for x := 0; x < 300; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == 0xc6 && g>>8 == 0x28 && b>>8 == 0x28 { // #c62828, the diagnosis box's edge
				edge++
				break
			}
		}
	}
	require.GreaterOrEqual(t, edge, dBottom-dTop-4, "the diagnosis box is not in the screenshot")
	if out := os.Getenv("TENURE_SCREENSHOT_DIR"); out != "" {
		require.NoError(t, os.MkdirAll(out, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(out, "failing-first-screen.png"), mustRead(t, shot), 0o644))
	}
}

// TestLinearizabilityPageContext checks the linearizability page of the naive run: a header with the run,
// its seed and verdicts and a link back, clients named by instance, operations labelled by endpoint; and
// in a browser (when there is one), that porcupine still draws it, with the instance names as row labels.
func TestLinearizabilityPageContext(t *testing.T) {
	dir, r := failingNaiveReport(t)
	page := string(mustRead(t, filepath.Join(dir, FileLinearizability)))
	require.Contains(t, page, "<b>redis-partition</b> · system naive · seed 1 · run FAILED · linearizability <b>pass</b>")
	require.Contains(t, page, `<a href="report.html">back to the report</a>`)
	require.Contains(t, page, `const tenureClientNames = {"0":"i0…0442","1":"i1…341e","2":"i2…9b8e"}`)
	require.Contains(t, page, `"Description":"ep-5: acquire(i0…0442, 3s) -\u003e ok"`)
	require.NotRegexp(t, `\d\.\d{4,}m?s\b`, page, "durations are rounded, states' expiries to the millisecond")
	for _, in := range buildModel(r).insts {
		require.NotContains(t, page, `acquire(`+in.id, "operations name instances by their short names")
	}

	browser := findBrowser(t)
	dom := string(runBrowser(t, browser, t.TempDir(), "--window-size=1400,900", "--dump-dom", "file://"+filepath.Join(dir, FileLinearizability)))
	for _, want := range []string{`text-anchor="end">i0…0442</text>`, `text-anchor="end">i1…341e</text>`, "ep-5: acquire(i0…0442, 3s)"} {
		require.Contains(t, dom, want, "porcupine's drawing")
	}
}

// TestSuiteIndexFitsInBrowser renders a suite index over runs with every invariant (the naive partition,
// failing, and two passing copies) at 1,400 px and requires the table to fit without sideways scrolling,
// with the failing run first.
func TestSuiteIndexFitsInBrowser(t *testing.T) {
	browser := findBrowser(t)
	_, r := failingNaiveReport(t)
	root := t.TempDir()
	var entries []SuiteEntry
	for i, name := range []string{"passing-a", "redis-partition", "passing-b"} {
		run := r
		run.History.Meta.Scenario = name
		run.Passed = i != 1
		rel := filepath.Join("runs", name)
		require.NoError(t, WriteRun(filepath.Join(root, rel), run))
		res, err := ReadResult(filepath.Join(root, rel))
		require.NoError(t, err)
		entries = append(entries, res.Entry(rel))
	}
	require.NoError(t, WriteSuite(root, "ci", entries))
	page := parsePage(t, filepath.Join(root, FileIndex))
	rows := page.byClass("run")
	require.Len(t, rows, 3)
	require.True(t, rows[0].hasClass("violated"), "failures first")

	measure := filepath.Join(root, "measure.html")
	src := string(mustRead(t, filepath.Join(root, FileIndex)))
	script := `<script>(function(){var r=document.querySelector("table.suite").getBoundingClientRect();` +
		`var p=document.createElement("pre");p.id="layout";p.textContent="layout "+[r.right,document.documentElement.scrollWidth,innerWidth].map(Math.round).join(" ");` +
		`document.body.appendChild(p);})();</script>`
	require.NoError(t, os.WriteFile(measure, []byte(strings.Replace(src, "</body>", script+"</body>", 1)), 0o644))
	dom := string(runBrowser(t, browser, t.TempDir(), "--window-size=1400,900", "--dump-dom", "file://"+measure))
	const mark = `<pre id="layout">layout `
	i := strings.Index(dom, mark)
	require.GreaterOrEqual(t, i, 0, "the measuring script did not run")
	var right, scrollW, w int
	_, err := fmt.Sscan(dom[i+len(mark):], &right, &scrollW, &w)
	require.NoError(t, err)
	t.Logf("table right edge %d px, page %d px wide, viewport %d px", right, scrollW, w)
	require.Equal(t, 1400, w)
	require.LessOrEqual(t, right, w, "the suite table is wider than the screen")
	require.LessOrEqual(t, scrollW, w, "the page scrolls sideways")
}
