package reports

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A drop in operations at a fault must not be drawn before the fault: smoothing stays within segments.
func TestSmoothRateDoesNotLeakAcrossSegments(t *testing.T) {
	counts, seg := make([]int, 100), make([]int, 100)
	for i := range counts {
		if i < 50 {
			counts[i] = 10
		} else {
			seg[i] = 1
		}
	}
	bw := 100 * time.Millisecond
	whole := smoothRate(counts, nil, 8, bw)
	split := smoothRate(counts, seg, 8, bw)
	require.Less(t, whole[48], 99.0, "without segments the drop leaks backwards (the case this guards)")
	for i := range 50 {
		require.InDelta(t, 100, split[i], 1e-9, "bucket %d before the fault", i)
	}
	for i := 50; i < 100; i++ {
		require.Zero(t, split[i], "bucket %d after the fault", i)
	}
}
