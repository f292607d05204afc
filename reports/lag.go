package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// How the harness's lag is drawn on the timeline: one row for the harness itself (the larger of the
// canary's lateness and the runtime's scheduling latency in each window), one for the backend's answers
// to the harness's pings. A bar's height grows with the lag up to lagFullScale, where it fills the row;
// the dashed line is checker.LagThreshold, above which a bar turns amber.
const (
	lagRowH      = 16.0
	lagFullScale = 4 * checker.LagThreshold
)

// drawLagRows draws the harness's lag rows at y, when the history recorded lag, and returns the y below
// them.
func drawLagRows(c *canvas, m *model, a timeAxis, y float64) float64 {
	lag := m.meta.Lag
	if lag == nil {
		return y
	}
	c.text(8, y+10, `class="section"`, "harness")
	y += 14
	rows := []struct {
		label, what string
		value       func(history.LagSample) time.Duration
		ping        bool
	}{
		{"harness lag", "how late the harness ran (canary timer, goroutine scheduling)", history.LagSample.Harness, false},
		{"backend ping", "the backend's answer to the harness's own PING", func(s history.LagSample) time.Duration { return s.Ping }, true},
	}
	for _, r := range rows {
		fmt.Fprintf(&c.b, `<g class="lag-row" data-lag="%s"><title>%s: %s</title>`, esc(r.label), esc(r.what), esc(lagSummaryText(lag)))
		c.text(gutterLeft-6, y+12, `class="rowlabel" text-anchor="end"`, r.label)
		c.rect(a.x0, y+1, a.w, lagRowH-2, `class="row-bg"`)
		base := y + lagRowH - 1
		for _, s := range lag.Samples {
			v := r.value(s)
			if v < lag.Floor {
				continue
			}
			h := (lagRowH - 2) * min(1, float64(v)/float64(lagFullScale))
			// A value is noted when the lateness ended, in this window: a stall longer than the window
			// began before it, and the bar reaches back over it.
			x1, x2 := a.x(s.At+lag.Window-max(lag.Window, v)), a.x(s.At+lag.Window)
			class, tip := "lag", lagTip(s, lag.Window)
			switch {
			case r.ping && m.backendFaultDuring(s.At-v, s.At+lag.Window):
				tip += " (during a fault of the backend: the fault's doing, not counted)"
			case v > checker.LagThreshold:
				class = "lag over"
			}
			fmt.Fprintf(&c.b, `<rect class="%s" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
				class, num(x1), num(base-h), num(max(x2-x1, 1)), num(h), esc(tip))
		}
		ty := base - (lagRowH-2)*float64(checker.LagThreshold)/float64(lagFullScale)
		c.line(a.x0, ty, a.x0+a.w, ty, `class="lag-threshold"`)
		c.raw("</g>")
		y += lagRowH
	}
	return y + 6
}

// lagTip describes one lag window.
func lagTip(s history.LagSample, window time.Duration) string {
	var parts []string
	for _, p := range []struct {
		what string
		v    time.Duration
	}{{"canary timer", s.Canary}, {"goroutine scheduling", s.Sched}, {"backend ping", s.Ping}} {
		if p.v > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", p.what, fmtDur(p.v)))
		}
	}
	return fmt.Sprintf("%s–%s: %s", fmtAt(s.At), fmtAt(s.At+window), strings.Join(parts, ", "))
}

// lagSummaryText states what the lag monitor saw over the run, or "" when it did not run.
func lagSummaryText(l *history.Lag) string {
	if l == nil {
		return ""
	}
	stat := func(what string, s history.LagSummary) string {
		return fmt.Sprintf("%s max %s (p99 %s)", what, fmtDur(s.Max), fmtDur(s.P99))
	}
	lagged, starved := 0, 0
	for _, s := range l.Samples {
		if max(s.Canary, s.Sched, s.Ping) >= l.Floor {
			lagged++
		} else {
			starved++
		}
	}
	out := fmt.Sprintf("%s, %s, %s, over %d windows of %s (p99 of each window's worst); %d at or above %s",
		stat("canary timer", l.Canary), stat("goroutine scheduling", l.Sched), stat("backend ping", l.Ping),
		l.Windows, fmtDur(l.Window), lagged, fmtDur(l.Floor))
	if starved > 0 {
		out += fmt.Sprintf("; %d more in which the system's own processes used a whole CPU", starved)
	}
	return out
}

// worstLag is the worst lag any inconclusive finding coincided with.
func (m *model) worstLag() (checker.LagFinding, bool) {
	var worst checker.LagFinding
	for _, v := range m.inconc {
		if v.v.Lag != nil && v.v.Lag.Max > worst.Max {
			worst = *v.v.Lag
		}
	}
	return worst, worst.Max > 0
}

// inconclusiveHeadline says in one line why a run is inconclusive.
func inconclusiveHeadline(m *model) string {
	s := fmt.Sprintf("No invariant was violated, but %s coincided with harness lag above %s",
		plural(len(m.inconc), "timing finding", "timing findings"), fmtDur(checker.LagThreshold))
	if w, ok := m.worstLag(); ok {
		s += fmt.Sprintf(" (the worst: %s late, by the %s, at %s)", fmtDur(w.Max), w.Source, fmtAt(w.At))
	}
	return s + ": the machine was too loaded for this run to tell the system's lateness from the harness's. " +
		"It is evidence neither way; run it again (same seed) on a quieter machine."
}

// inconclusiveTip describes an inconclusive finding with its lag in one line.
func inconclusiveTip(v violInfo) string {
	s := violTip(v)
	if v.v.Lag != nil {
		s += " [" + v.v.Lag.String() + "]"
	}
	return s
}

// backendFaultDuring reports whether a fault without targets (the backend's, or every instance's)
// overlaps [from, to]: the checker leaves the backend's pings then out, and so does the drawing's amber.
func (m *model) backendFaultDuring(from, to time.Duration) bool {
	for _, f := range m.faults {
		if len(f.targets) == 0 && f.at <= to && f.end >= from {
			return true
		}
	}
	return false
}
