// Package promtest reads metric values back from a Prometheus registry in tests.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the value of the first series of metric name on reg for which match returns true:
// a gauge's or counter's value, a histogram's sample count. It returns 0 when there is none.
func Value(t testing.TB, reg *prometheus.Registry, name string, match func(labels map[string]string) bool) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if match(labels) {
				return valueOf(m)
			}
		}
	}
	return 0
}

// Label matches series whose label name has value.
func Label(name, value string) func(map[string]string) bool {
	return func(l map[string]string) bool { return l[name] == value }
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}
