package lease

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/promtest"
)

func TestMetricsOnCallersRegistry(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	mr.ClockTTL(true)
	c := newClient(t, mr.Addr())
	ctx := context.Background()
	require.NoError(t, MarkEstablished(ctx, c, "poll:"))
	reg := prometheus.NewRegistry()
	cfg := testConfigWithPoll()
	cfg.InstanceID = "m1"
	cfg.Targets = StaticTargets{"x", "y"}
	cfg.Registerer = reg
	cfg.Logger = quietLogger()
	m, err := New(c, cfg)
	require.NoError(t, err)
	_, err = New(c, cfg)
	require.Error(t, err, "the same instance cannot register twice on one registry")

	require.NoError(t, m.Start(ctx))
	require.Eventually(t, func() bool { return len(m.Held()) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 2.0, gauge(t, reg, "tenure_lease_held", ""))
	require.Equal(t, 2.0, gauge(t, reg, "tenure_lease_acquisitions_total", "ok"))
	require.NoError(t, m.Stop(ctx))
	require.Equal(t, 0.0, gauge(t, reg, "tenure_lease_held", ""))
	require.Equal(t, 2.0, gauge(t, reg, "tenure_lease_releases_total", ReasonStopped))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(mfs), 4)

	global, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range global {
		require.NotContains(t, mf.GetName(), "tenure_lease", "nothing on the global registry")
	}
}

// gauge returns the value of the gauge or counter name on reg, for the series whose non-instance label
// equals label ("" for none).
func gauge(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	return promtest.Value(t, reg, name, func(l map[string]string) bool {
		if label == "" {
			return true
		}
		for k, v := range l {
			if k != "instance" && v == label {
				return true
			}
		}
		return false
	})
}
