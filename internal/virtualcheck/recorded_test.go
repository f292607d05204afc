package virtualcheck_test

import (
	"bytes"
	"context"
	"path/filepath"
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

// TestVirtualVerdictsMatchTheRealMatrix runs the same cells in virtual time, on the recorded seeds and
// time scale, and compares them with the record cell by cell (simrun matrix compare): no cell may
// always pass on one side and always fail on the other, no reference system may fail, and every cell
// virtual time runs must have a real verdict (a cell added since the record was measured fails here
// until it is measured). TestVirtualAndRealVerdictsAgree checks ten of these cells live.
func TestVirtualVerdictsMatchTheRealMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("about 600 runs in virtual time: not in -short")
	}
	bubble.ForTest(t)
	out := filepath.Join(t.TempDir(), "virtual")
	var log bytes.Buffer
	code := simcli.Main(context.Background(), []string{"matrix", "--virtual", "--suite", "ci",
		"--time-scale", "0.1", "--seeds", "2", "--out", out}, &log, &log)
	if code != 0 {
		t.Fatalf("the virtual matrix exited %d:\n%s", code, log.String())
	}
	var cmp bytes.Buffer
	code = simcli.Main(context.Background(), []string{"matrix", "compare", realVerdicts, out}, &cmp, &cmp)
	t.Logf("simrun matrix compare %s (virtual):\n%s", realVerdicts, cmp.String())
	if code != 0 {
		t.Fatalf("virtual and real time judged the ci cells differently (exit %d): see the cells listed above; "+
			"a cell that changed on purpose is measured again with make agree AGREE_RECORD=1", code)
	}
}
