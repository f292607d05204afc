package reports

import (
	"testing"
	"time"
)

// BenchmarkWriteRun100k writes every file of a run whose history holds about 100,000 events
// (10 instances × 100 endpoints over 5 minutes at a 500 ms poll interval).
func BenchmarkWriteRun100k(b *testing.B) {
	cfg := defaultSynth()
	cfg.dur = 320 * time.Second
	r := synthRun(cfg)
	dir := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		if err := WriteRun(dir, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(r.History.Events)), "events")
}
