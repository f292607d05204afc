package reports

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// firstScreen is a page a reader opens first and what its first screen must show: the badge, and the
// element that explains it (its id) with a phrase of that explanation.
type firstScreen struct {
	name, page     string
	badge, explain string
	phrase         string
}

// TestFirstScreens renders, at 1,400 × 900 in headless Chromium, a failing run, an interrupted run, a
// Cluster run whose fault is declared outside the assumptions and a matrix, and requires in each the
// right badge and the explanation of it within the first screen: measured in the browser by a copy of
// the page that writes the positions into itself, and read back from the DOM. With TENURE_SCREENSHOT_DIR
// set, the screenshots are kept there (CI artifacts; they are not in the repository).
func TestFirstScreens(t *testing.T) {
	browser := findBrowser(t)
	failing, _ := failingNaiveReport(t)

	interrupted := synthRun(defaultSynth())
	interrupted.History.Meta.Interrupted = true
	interrupted.Passed = false

	matrix := t.TempDir()
	require.NoError(t, WriteMatrix(matrix, matrixOf(
		MatrixCell{System: "reference", Scenario: "gc-pause", Status: MatrixPass, Text: "pass"},
		MatrixCell{System: "reference", Scenario: "redis-restart-empty", Status: MatrixPass, Text: "pass"},
		MatrixCell{System: "spec-naive", Scenario: "gc-pause", Status: MatrixExpected, Text: "two-holders double-poll outside-lease imbalance", Characteristic: true},
		MatrixCell{System: "spec-naive", Scenario: "redis-restart-empty", Status: MatrixExpected, Text: "imbalance"},
		MatrixCell{System: "redislock", Scenario: "gc-pause", Status: MatrixExpected, Text: "two-holders double-poll"},
		MatrixCell{System: "redislock", Scenario: "redis-restart-empty", Status: MatrixExpected, Text: "two-holders double-poll imbalance", Characteristic: true},
	)))

	for _, sc := range []firstScreen{
		{"failing run", filepath.Join(failing, FileReport), "FAILED", "diagnosis", "Diagnosis"},
		{"interrupted run", filepath.Join(writeRun(t, interrupted), FileReport), "INTERRUPTED", "headline", "no verdict is drawn from it"},
		{"cluster run with an excused fault", filepath.Join(writeRun(t, outsideRun()), FileReport), "PASSED", "outside", "declared outside reference's assumptions"},
		{"matrix", filepath.Join(matrix, FileIndex), "PASSED", "legend", "expected failure: a baseline or peer failed"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			src := string(mustRead(t, sc.page))
			script := `<script>(function(){var out=[];for(const id of ["verdict",` + fmt.Sprintf("%q", sc.explain) + `]){` +
				`var e=document.getElementById(id);var r=e.getBoundingClientRect();out.push(Math.round(r.top),Math.round(r.bottom))}` +
				`out.push(innerWidth,document.documentElement.scrollWidth);` +
				`var p=document.createElement("pre");p.id="layout";p.textContent="layout "+out.join(" ");document.body.appendChild(p);})();</script>`
			measure := filepath.Join(filepath.Dir(sc.page), "measure-"+strings.ReplaceAll(sc.name, " ", "-")+".html")
			require.NoError(t, os.WriteFile(measure, []byte(strings.Replace(src, "</body>", script+"</body>", 1)), 0o644))
			dom := string(runBrowser(t, browser, t.TempDir(), "--window-size=1400,900", "--dump-dom", "file://"+measure))
			const mark = `<pre id="layout">layout `
			i := strings.Index(dom, mark)
			require.GreaterOrEqual(t, i, 0, "the measuring script did not run")
			var bTop, bBottom, eTop, eBottom, w, scrollW int
			_, err := fmt.Sscan(dom[i+len(mark):], &bTop, &bBottom, &eTop, &eBottom, &w, &scrollW)
			require.NoError(t, err)
			t.Logf("badge %d–%d px, %s %d–%d px, page %d of %d px wide", bTop, bBottom, sc.explain, eTop, eBottom, scrollW, w)
			require.Equal(t, 1400, w)
			require.LessOrEqual(t, bBottom, 900, "the badge is in the first screen")
			require.LessOrEqual(t, eBottom, 900, "the explanation is in the first screen")
			require.LessOrEqual(t, scrollW, w, "the page scrolls sideways")

			page := parseXML(t, []byte(src))
			require.Equal(t, sc.badge, strings.TrimSpace(page.byID("verdict").text.String()))
			require.Contains(t, strings.Join(strings.Fields(page.byID(sc.explain).text.String()), " "), sc.phrase)

			shot := filepath.Join(t.TempDir(), "screen.png")
			runBrowser(t, browser, t.TempDir(), "--screenshot="+shot, "--window-size=1400,900", "file://"+sc.page)
			f, err := os.Open(shot)
			require.NoError(t, err)
			img, err := png.Decode(f)
			f.Close()
			require.NoError(t, err)
			require.Equal(t, 1400, img.Bounds().Dx())
			require.Equal(t, 900, img.Bounds().Dy())
			if out := os.Getenv("TENURE_SCREENSHOT_DIR"); out != "" {
				require.NoError(t, os.MkdirAll(out, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(out, strings.ReplaceAll(sc.name, " ", "-")+".png"), mustRead(t, shot), 0o644))
			}
		})
	}
}
