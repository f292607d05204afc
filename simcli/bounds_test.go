package simcli_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/simcli"
)

// simrun bounds prints what the checker's model derives for the canonical faults, at the timing asked
// for; a bad flag says which and how to fix it, and runs nothing.
func TestBoundsPrintsTheModelsTable(t *testing.T) {
	code, out, _ := run(t, "bounds", "--time-scale", "0.1")
	require.Equal(t, simcli.ExitOK, code)
	require.Contains(t, out, "lease TTL 3s")
	require.Contains(t, out, "the holder crashes")
	require.Contains(t, out, "3.102s", "a crash of a holder that wrote until it crashed: a TTL and the tolerance")

	code, _, errOut := run(t, "bounds", "--time-scale", "-1")
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, errOut, "time-scale")
	code, _, errOut = run(t, "bounds", "--system", "nope")
	require.Equal(t, simcli.ExitUsage, code)
	require.Contains(t, errOut, "--system")
}
