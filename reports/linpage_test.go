package reports

import (
	"io"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// A wipe of the backend is drawn on a client row of its own: the linearizability page names it, as it
// names the instances' rows, instead of leaving a bare number.
func TestLinearizabilityPageNamesTheBackendRow(t *testing.T) {
	const key = "poll:lease:ep-0"
	var ev []history.Event
	add := func(e history.Event) { e.Seq = int64(len(ev) + 1); ev = append(ev, e) }
	s := time.Second
	add(history.Event{Kind: history.KindOp, At: 1 * s, End: 1*s + time.Millisecond, Instance: "alpha", Endpoint: "ep-0",
		Op: &history.Op{Kind: history.OpAcquire, Key: key, Owner: "alpha:1", TTL: 3 * s, OK: true}})
	add(history.Event{Kind: history.KindFault, At: 2 * s, End: 3 * s,
		Fault: &history.Fault{ID: "f1", Name: "redis-restart", Wipes: true}})
	add(history.Event{Kind: history.KindOp, At: 4 * s, End: 4*s + time.Millisecond, Instance: "beta", Endpoint: "ep-0",
		Op: &history.Op{Kind: history.OpAcquire, Key: key, Owner: "beta:1", TTL: 3 * s, OK: true}})
	h := history.History{Meta: history.Meta{Scenario: "wipe", System: "sys", Kind: "lease", Instances: 2, Endpoints: 1,
		LeaseTTL: 3 * s, PollInterval: s, FailoverBound: 3 * s, Duration: 5 * s, TimeScale: 1}, Events: ev}
	opts := checker.DefaultOptions()
	r := Run{History: h, Report: checker.Check(h, opts), Passed: true,
		Linearizability: func(w io.Writer) error { return checker.VisualizeLinearizability(w, h, opts) }}
	dir := writeRun(t, r)
	page := string(mustRead(t, filepath.Join(dir, FileLinearizability)))
	names := regexp.MustCompile(`const tenureClientNames = .*`).FindString(page)
	require.Equal(t, `const tenureClientNames = {"0":"alpha","1":"beta","2":"backend"}`, names)
}
