package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The rate a process's clock ran at is measured from its readings as they arrived; one reading held up
// on the way does not move it, where the rate between the first and the last reading moves by the delay
// over the span.
func TestClockRateIgnoresADelayedReading(t *testing.T) {
	t.Parallel()
	var s clockSamples
	for i := 0; i < 6; i++ {
		at := time.Duration(i) * 300 * time.Millisecond
		s.at, s.clock = append(s.at, at), append(s.clock, 1e12+0.5*float64(at/time.Millisecond))
	}
	s.at[5] += 90 * time.Millisecond // the last request took 90 ms longer on the way
	naive := (s.clock[5] - s.clock[0]) / float64((s.at[5]-s.at[0])/time.Millisecond)
	require.Less(t, naive, 0.48, "from its ends alone the rate is %.4f", naive)
	require.InDelta(t, 0.5, s.rate(), 0.001)

	require.Zero(t, clockSamples{}.rate())
	many := clockSamples{}
	for i := 0; i < 4000; i++ {
		many.at, many.clock = append(many.at, time.Duration(i)*time.Millisecond), append(many.clock, 2*float64(i))
	}
	require.InDelta(t, 2, many.rate(), 1e-9)
}
