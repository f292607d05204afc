package reports

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// An answered write that WAIT did not confirm reads as such in the event descriptions, not as a plain ok.
func TestDescribeNotReplicatedWrite(t *testing.T) {
	e := &history.Event{Kind: history.KindOp, Op: &history.Op{Kind: history.OpAcquire, Key: "poll:lease:e1", Owner: "a", OK: true}}
	require.Contains(t, describe(e), "→ ok")
	require.NotContains(t, describe(e), "WAIT")
	e.Op.NotReplicated = true
	require.Contains(t, describe(e), "→ ok, not confirmed by WAIT (not counted)")
}
