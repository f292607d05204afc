package virtualcheck_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/tenurelabs/tenure/internal/bubble"
	"github.com/tenurelabs/tenure/simcli"
)

// realVerdicts is the real side of the comparison, measured by `make agree AGREE_RECORD=1`: the ci
// suite's scenarios that virtual time holds, for every system that runs on one Redis (the reference,
// the baselines and the peers), in real time against a private redis-server through toxiproxy, at the
// ci suite's time scale. Measuring it takes about an hour, so it is kept here, and measured again when a
// system or a scenario changes; its header says when and from which commit.
const realVerdicts = "testdata/real-verdicts.tsv"

// matrixOutEnv, when set, makes this test binary the niced child that runs the virtual matrix into it.
const matrixOutEnv = "TENURE_VIRTUALCHECK_MATRIX_OUT"

// TestVirtualVerdictsMatchTheRealMatrix runs the same cells in virtual time, on the recorded seeds and
// time scale, and compares them with the record cell by cell (simrun matrix compare): no cell may
// always pass on one side and always fail on the other, no reference system may fail, and every cell
// virtual time runs must have a real verdict (a cell added since the record was measured fails here
// until it is measured). TestVirtualAndRealVerdictsAgree checks ten of these cells live.
//
// The virtual matrix is a minute of one core's work: it runs in a child process at the lowest
// priority, so that the real-time tests beside it in make test keep the machine.
func TestVirtualVerdictsMatchTheRealMatrix(t *testing.T) {
	if out := os.Getenv(matrixOutEnv); out != "" {
		bubble.ForTest(t)
		var log bytes.Buffer
		if code := simcli.Main(context.Background(), []string{"matrix", "--virtual", "--suite", "ci",
			"--time-scale", "0.1", "--seeds", "2", "--out", out}, &log, &log); code != 0 {
			t.Fatalf("the virtual matrix exited %d:\n%s", code, log.String())
		}
		return
	}
	if testing.Short() {
		t.Skip("about 600 runs in virtual time: not in -short")
	}
	out := filepath.Join(t.TempDir(), "virtual")
	child := exec.Command("nice", "-n", "19", os.Args[0], "-test.run", "^TestVirtualVerdictsMatchTheRealMatrix$", "-test.count", "1")
	child.Env = append(os.Environ(), matrixOutEnv+"="+out)
	// The child dies with this test (Pdeathsig fires when the forking thread ends: this goroutine keeps
	// it until the child has exited).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if b, err := child.CombinedOutput(); err != nil {
		t.Fatalf("the virtual matrix: %v\n%s", err, b)
	}
	var cmp bytes.Buffer
	code := simcli.Main(context.Background(), []string{"matrix", "compare", realVerdicts, out}, &cmp, &cmp)
	t.Logf("simrun matrix compare %s (virtual):\n%s", realVerdicts, cmp.String())
	if code != 0 {
		t.Fatalf("virtual and real time judged the ci cells differently (exit %d): see the cells listed above; "+
			"a cell that changed on purpose is measured again with make agree AGREE_RECORD=1", code)
	}
}
