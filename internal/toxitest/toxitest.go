// Package toxitest gives tests a real toxiproxy-server process, for the code that drives an external
// toxiproxy (simrun --toxiproxy) rather than the one embedded in the harness.
package toxitest

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Start builds toxiproxy-server from the toxiproxy module (the version go.mod pins), starts it on a free
// loopback port, and returns its URL. It is stopped when the test ends, and with the test process
// (Pdeathsig) if that dies first.
func Start(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toxiproxy-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/Shopify/toxiproxy/v2/cmd/server").CombinedOutput()
	require.NoError(t, err, string(out))
	port, err := redisserver.FreePort()
	require.NoError(t, err)
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/version")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "toxiproxy-server did not come up")
	return url
}
