package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// A command held on the wire that landed late (history.Op.Landed) is drawn: a mark at its landing,
// joined to its call, on its instance's row and on its lane of the endpoint it concerns, its tooltip
// saying when it landed. A history without landings has none.
func TestWriteRunDrawsHeldCommandsLanding(t *testing.T) {
	cfg := defaultSynth()
	cfg.instances, cfg.endpoints, cfg.dur = 3, 6, 20*time.Second
	r := synthRun(cfg)
	page := checkReportPage(t, writeRun(t, r), r)
	require.Empty(t, page.byClass("landed"), "nothing landed late")
	require.Empty(t, page.byClass("landed-mark"))

	// A renewal of an endpoint by an instance that polled it: its lane is drawn.
	m := buildModel(r)
	pick := -1
	for i := range r.History.Events {
		e := &r.History.Events[i]
		if e.Op == nil || e.Op.Kind != history.OpRenew || e.Endpoint == "" {
			continue
		}
		ep := m.epIdx[e.Endpoint]
		for _, k := range m.laneInstances(ep) {
			if m.insts[k].id == e.Instance {
				pick = i
			}
		}
		if pick >= 0 {
			break
		}
	}
	require.GreaterOrEqual(t, pick, 0, "the synthetic run has a renewal to hold")
	events := append([]history.Event(nil), r.History.Events...)
	e := &events[pick]
	op := *e.Op
	op.Unknown, op.OK, op.GaveUp, op.Landed = true, false, e.At+200*time.Millisecond, e.At+400*time.Millisecond
	e.Op, e.End = &op, history.Infinity
	r.History.Events = events

	page = checkReportPage(t, writeRun(t, r), r)
	ov := page.svg("overview")
	require.NotNil(t, ov)
	groups := ov.byClass("landed")
	require.Len(t, groups, 2, "on the instance's row and on its lane of the endpoint")
	for _, g := range groups {
		require.Len(t, g.byClass("landed-mark"), 1)
		require.NotEmpty(t, g.byClass("landed-wait"), "joined to its call")
		titles := g.byName("title")
		require.Len(t, titles, 1)
		tip := titles[0].text.String()
		require.True(t, strings.HasPrefix(tip, "landed at "+fmtAt(op.Landed)+", 400ms after its call at "+fmtAt(e.At)), tip)
	}
	rows := ov.byClass("inst-row")
	var onRow int
	for _, row := range rows {
		if row.attrs["data-instance"] == e.Instance {
			onRow = len(row.byClass("landed"))
		}
	}
	require.Equal(t, 1, onRow, "on its instance's row")
}
