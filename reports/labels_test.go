package reports

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// zombieRun is a holder frozen while it polled nine endpoints: another takes them over, and when it
// wakes it polls each once more. Every endpoint then has three findings on one holder's lane within a
// pixel or two (two holders at 9.22 s, a zombie poll and a poll outside its lease at 10.61 s), and a
// takeover bracket above them: the labels of a page drawn without care land on one another.
func zombieRun() Run {
	s, ms := time.Second, time.Millisecond
	a, b := "i0-1795724836724135723-9acb0442", "i1-1795724836855682772-f0c5341e"
	var ev []history.Event
	add := func(e history.Event) { e.Seq = int64(len(ev) + 1); ev = append(ev, e) }
	add(history.Event{Kind: history.KindFault, At: 6110 * ms, End: 10610 * ms,
		Fault: &history.Fault{ID: "f1", Name: "pause", Targets: []string{a}}})
	var sh, sp, va []checker.Violation
	var fos []checker.Failover
	for k := range 9 {
		ep := fmt.Sprintf("ep-%d", k)
		add(history.Event{Kind: history.KindBelief, At: 30 * ms, Instance: a, Endpoint: ep, Belief: &history.Belief{Held: true, Token: uint64(k + 1)}})
		for at := 100 * ms; at < 6*s; at += 500 * ms {
			add(history.Event{Kind: history.KindPoll, At: at, End: at + 100*ms, Instance: a, Endpoint: ep, Poll: &history.Poll{Outcome: history.PollOK}})
		}
		took := 9220*ms + time.Duration(k)*ms
		add(history.Event{Kind: history.KindBelief, At: took, Instance: b, Endpoint: ep, Belief: &history.Belief{Held: true, Token: uint64(k + 100)}})
		for at := took; at < 15*s; at += 500 * ms {
			add(history.Event{Kind: history.KindPoll, At: at, End: at + 100*ms, Instance: b, Endpoint: ep, Poll: &history.Poll{Outcome: history.PollOK}})
		}
		zombie := 10609*ms + time.Duration(k)*100*time.Microsecond
		add(history.Event{Kind: history.KindPoll, At: zombie, End: zombie + 10*ms, Instance: a, Endpoint: ep, Poll: &history.Poll{Outcome: history.PollCancelled}})
		add(history.Event{Kind: history.KindBelief, At: zombie + 10*ms, Instance: a, Endpoint: ep, Belief: &history.Belief{Held: false}})
		sh = append(sh, checker.Violation{At: took, Endpoint: ep, Instances: []string{a, b}, Message: "both believed they held " + ep, ReachedResource: true})
		sp = append(sp, checker.Violation{At: zombie, Endpoint: ep, Instances: []string{b, a}, Message: "zombie poll of " + ep, ReachedResource: true})
		va = append(va, checker.Violation{At: zombie, Endpoint: ep, Instances: []string{a}, Message: "a poll of " + ep + " outside its lease"})
		lat := took - 6110*ms
		if k == 4 {
			lat = 3680 * ms
		}
		fos = append(fos, checker.Failover{FaultID: "f1", Fault: "pause", Endpoint: ep, From: a, To: b, FaultAt: 6110 * ms,
			PolledAt: 6110*ms + lat, MeasuredFrom: 6110 * ms, Latency: lat, Bound: 3101 * ms})
	}
	history.Sort(ev)
	h := history.History{Meta: history.Meta{Scenario: "gc-pause", System: "redlock", Kind: "lease", Seed: 1, TimeScale: 0.1,
		Instances: 2, Endpoints: 9, LeaseTTL: 3 * s, FailoverBound: 3101 * ms, PollInterval: 500 * ms, Duration: 15 * s,
		Command: "bin/simrun run gc-pause --seed 1 --system redlock"}, Events: ev}
	rep := checker.Report{Failovers: fos, Results: []checker.Result{
		{Invariant: checker.InvAssumptions, Outcome: checker.Pass, Message: "ok"},
		{Invariant: checker.InvSingleHolder, Outcome: checker.Violated, Message: "two holders", Violations: sh},
		{Invariant: checker.InvSinglePoller, Outcome: checker.Violated, Message: "zombie polls", Violations: sp},
		{Invariant: checker.InvValidity, Outcome: checker.Violated, Message: "outside the lease", Violations: va},
	}}
	return Run{History: h, Report: rep}
}

// labelBoxes returns the box of every label of a chart, as labelBox estimates it from the drawn
// element's position, anchor, class and text.
func labelBoxes(t *testing.T, svg *node) map[string][]box {
	out := map[string][]box{}
	for _, txt := range svg.byName("text") {
		class := strings.Fields(txt.attrs["class"])
		if len(class) == 0 {
			continue
		}
		size, ok := labelFontPx[class[0]]
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(txt.attrs["x"], 64)
		require.NoError(t, err)
		y, err := strconv.ParseFloat(txt.attrs["y"], 64)
		require.NoError(t, err)
		s := txt.text.String()
		out[s] = append(out[s], labelBox(x, y, txt.attrs["text-anchor"] == "end", size, s))
	}
	return out
}

// TestLabelsNeverOverlap draws reports whose markers crowd one another and requires that no two labels
// of one chart meet, in the overview, the detail blocks, the zooms and the balance chart alike.
func TestLabelsNeverOverlap(t *testing.T) {
	for name, r := range map[string]Run{
		"zombie polls":      zombieRun(),
		"large fleet":       synthRun(defaultSynth()),
		"small fleet":       synthRun(synthConfig{instances: 3, endpoints: 9, dur: 30 * time.Second, ttl: 3 * time.Second, poll: 500 * time.Millisecond, seed: 2}),
		"naive partition":   naiveRunForLabels(t),
		"interrupted early": func() Run { r := zombieRun(); r.History.Meta.Interrupted = true; return r }(),
	} {
		t.Run(name, func(t *testing.T) {
			page := parsePage(t, filepath.Join(writeRun(t, r), FileReport))
			labels := 0
			for i, svg := range page.byName("svg") {
				var all []box
				var texts []string
				for s, bs := range labelBoxes(t, svg) {
					for _, b := range bs {
						all = append(all, b)
						texts = append(texts, s)
					}
				}
				labels += len(all)
				for p := range all {
					for q := p + 1; q < len(all); q++ {
						require.False(t, all[p].overlaps(all[q]), "chart %d (%s): label %q %v overlaps %q %v",
							i, svg.attrs["data-view"], texts[p], all[p], texts[q], all[q])
					}
				}
			}
			require.Positive(t, labels, "the charts have labels to check")
		})
	}
}

// The crowded case keeps a label for each of the findings where there is room, and never drops a
// marker: every finding keeps its diamond, tooltip and link.
func TestCrowdedLabelsKeepEveryMarker(t *testing.T) {
	r := zombieRun()
	page := parsePage(t, filepath.Join(writeRun(t, r), FileReport))
	overview := page.svg("overview")
	require.Equal(t, 27, marked(overview, "vmark"), "one marker per finding")
	require.GreaterOrEqual(t, len(overview.byClass("vlabel")), 18, "two of each endpoint's three labels fit")
}

func naiveRunForLabels(t *testing.T) Run {
	_, r := failingNaiveReport(t)
	return r
}
