package lease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidityShrinksByDriftAndMargin(t *testing.T) {
	t.Parallel()
	require.Equal(t, 29*time.Second+700*time.Millisecond-500*time.Millisecond, validity(30*time.Second, 0.01, 500*time.Millisecond))
	require.Equal(t, 30*time.Second, validity(30*time.Second, 0, 0))
	require.Equal(t, 15*time.Second-time.Second, validity(30*time.Second, 0.5, time.Second))
	c := DefaultConfig()
	require.Equal(t, validity(c.LeaseTTL, c.DriftBound, c.SafetyMargin), c.Validity())
}

func TestConfirmedDeadline(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	valid := 10 * time.Second
	// A fresh grant counts from the send time, not from the reply.
	d, ok := confirmedDeadline(time.Time{}, t0, t0.Add(3*time.Second), valid)
	require.True(t, ok)
	require.Equal(t, t0.Add(valid), d)
	// A reply at or after the deadline it would set proves nothing.
	_, ok = confirmedDeadline(time.Time{}, t0, t0.Add(valid), valid)
	require.False(t, ok)
	// A renewal sent later moves the deadline forward, from its own send time.
	d, ok = confirmedDeadline(t0.Add(valid), t0.Add(4*time.Second), t0.Add(5*time.Second), valid)
	require.True(t, ok)
	require.Equal(t, t0.Add(14*time.Second), d)
	// A late reply to an older renewal neither moves it back nor forward.
	d, ok = confirmedDeadline(t0.Add(14*time.Second), t0.Add(2*time.Second), t0.Add(6*time.Second), valid)
	require.True(t, ok)
	require.Equal(t, t0.Add(14*time.Second), d)
	// A reply that arrives once the belief has ended does not revive it, however recent its send.
	d, ok = confirmedDeadline(t0.Add(valid), t0.Add(9*time.Second), t0.Add(valid), valid)
	require.False(t, ok)
	require.Equal(t, t0.Add(valid), d)
}

// The manager's deadline counts from the send time, shrunk by the drift bound, less the margin.
func TestManagerDeadlineArithmetic(t *testing.T) {
	t.Parallel()
	cfg := validConfig()
	cfg.LeaseTTL, cfg.DriftBound, cfg.SafetyMargin = 30*time.Second, 0.1, time.Second
	t0 := time.Unix(1000, 0)
	m, err := New(newClient(t, "127.0.0.1:1"), cfg)
	require.NoError(t, err)
	d, ok := m.confirm(time.Time{}, &scriptCall{sent: t0, replied: t0.Add(2 * time.Second)})
	require.True(t, ok)
	require.Equal(t, t0.Add(26*time.Second), d, "sent + TTL*(1-drift) - margin")
}
