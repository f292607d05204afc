package simcli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

func TestQuantileIsNearestRank(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, quantile(ds, 0.50))
	require.Equal(t, 99*time.Millisecond, quantile(ds, 0.99))
	require.Equal(t, 100*time.Millisecond, quantile(ds, 1))
	require.Equal(t, 7*time.Millisecond, quantile([]time.Duration{7 * time.Millisecond}, 0.99))
}

// Crashes count as failovers and graceful stops as handoffs; commands are counted per instance per
// renewal interval (TTL/3).
func TestBenchFiguresSplitFailoversFromHandoffs(t *testing.T) {
	t.Parallel()
	h := history.History{Meta: history.Meta{LeaseTTL: 3 * time.Second, Duration: 30 * time.Second}}
	for i := 0; i < 20; i++ {
		h.Events = append(h.Events, history.Event{Kind: history.KindOp, Instance: "a", Op: &history.Op{Kind: history.OpRenew}})
	}
	for i := 0; i < 10; i++ {
		h.Events = append(h.Events, history.Event{Kind: history.KindOp, Instance: "b", Op: &history.Op{Kind: history.OpRenew}})
	}
	h.Events = append(h.Events, history.Event{Kind: history.KindPoll, Instance: "a", Poll: &history.Poll{Outcome: history.PollOK}})
	rep := checker.Report{Failovers: []checker.Failover{
		{Fault: "crash", Latency: 3 * time.Second},
		{Fault: "restart", Latency: 3300 * time.Millisecond},
		{Fault: "crash", Latency: -1},
		{Fault: "stop", Latency: 5 * time.Millisecond},
	}}
	var f benchFigures
	f.add(h, rep)
	f.summarise()

	require.Equal(t, 2, f.Failovers)
	require.Equal(t, 1, f.Unmeasured)
	require.Equal(t, 3000.0, *f.FailoverP50ms)
	require.Equal(t, 3300.0, *f.FailoverP99ms)
	require.Equal(t, 3300.0, *f.FailoverMaxms)
	require.Equal(t, 1.1, *f.MaxOverTTL)
	require.Equal(t, 1, f.Handoffs)
	require.Equal(t, 5.0, *f.HandoffP50ms)
	require.Equal(t, 1000.0, f.RenewalIntervalms)
	require.Contains(t, f.RenewalSource, "TTL/3")
	require.Equal(t, 0.5, *f.CmdsPerInstPerRI) // (20/30 + 10/30) / 2
	require.Equal(t, 0.67, *f.CmdsPerInstPerRIMax)

	b, err := json.Marshal(f)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	for _, k := range []string{"scenario", "seeds", "failover_p50_ms", "failover_p99_ms", "failover_max_ms", "failover_max_over_ttl",
		"handoff_p50_ms", "handoff_p99_ms", "cmds_per_instance_per_renewal", "renewal_interval_source", "peak_rss_bytes", "peak_rss_source"} {
		require.Contains(t, got, k)
	}
	require.Equal(t, 1.1, got["failover_max_over_ttl"])
}

// A scenario with nothing to measure reports null, not zero.
func TestBenchFiguresWithoutTakeoversAreNull(t *testing.T) {
	t.Parallel()
	var f benchFigures
	f.add(history.History{Meta: history.Meta{LeaseTTL: 3 * time.Second, Duration: 30 * time.Second}}, checker.Report{})
	f.summarise()
	b, err := json.Marshal(f)
	require.NoError(t, err)
	require.Contains(t, string(b), `"failover_p50_ms":null`)
	require.Contains(t, string(b), `"handoff_p99_ms":null`)
}

func TestPeakRSSReadsVmHWM(t *testing.T) {
	t.Parallel()
	reset := resetPeakRSS() == nil
	n, src := peakRSS(reset)
	require.Greater(t, n, int64(1<<20), src)
	require.Contains(t, src, "VmHWM")
}
