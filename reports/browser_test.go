package reports

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// TestBrowserScreenshot renders the report of a 10 × 100 run with a crash, a partition and a double
// poll in headless Chromium and fails on a browser error or an unusable picture. The screenshot, the
// report and its summary are kept in TENURE_SCREENSHOT_DIR when that is set (for CI artifacts).
func TestBrowserScreenshot(t *testing.T) {
	browser := findBrowser(t)
	dir := writeRun(t, synthRun(defaultSynth()))
	shot := filepath.Join(t.TempDir(), "report.png")
	profile := t.TempDir()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--enable-logging=stderr", "--v=0",
		"--screenshot="+shot, "--window-size=1400,2400", "file://"+filepath.Join(dir, FileReport))
	// Chromium forks helpers: run it in its own process group and kill the whole group on timeout or
	// when the test ends, so nothing outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Output goes to a file, not a pipe: a helper that outlives the browser cannot hold Wait up.
	logPath := filepath.Join(t.TempDir(), "chromium.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
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
	f, err := os.Open(shot)
	require.NoError(t, err, "no screenshot written:\n%s", stderr.String())
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
