package reports

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// Excerpt limits.
const (
	excerptNeighbours = 3   // events kept before and after those a violation names, on its endpoint
	excerptMaxRows    = 40  // beyond this, only close neighbours of each named event are kept
	maxZooms          = 30  // violations drawn with a zoomed timeline
	maxExcerpts       = 100 // violations shown with their history excerpt
)

// excerptRow is one event of a violation's excerpt.
type excerptRow struct {
	Seq      int64
	At, End  string
	Kind     string
	Instance string
	Endpoint string
	Detail   string
	Named    bool // the violation names this event
	Context  bool // a fault or lifecycle change of an involved instance in the window
}

// excerpt returns the minimal history around a violation: the events it names, their neighbours on the
// same endpoint, and the faults and lifecycle changes of the instances involved in that stretch of time.
func (m *model) excerpt(v violInfo) []excerptRow {
	named := map[int]bool{}
	for _, s := range v.v.Events {
		if i, ok := m.bySeq[s]; ok {
			named[i] = true
		}
	}
	pick := map[int]bool{}
	for i := range named {
		pick[i] = true
	}
	if v.ep >= 0 {
		list := m.epEvents[v.ep]
		var pos []int
		for p, i := range list {
			if named[int(i)] {
				pos = append(pos, p)
			}
		}
		if len(pos) == 0 { // nothing named on this endpoint: take the events around the violation's time
			p := sort.Search(len(list), func(k int) bool { return m.ev[list[k]].At >= v.v.At })
			pos = []int{max(p-1, 0), min(p, len(list)-1)}
		}
		lo, hi := max(pos[0]-excerptNeighbours, 0), min(pos[len(pos)-1]+excerptNeighbours, len(list)-1)
		if hi-lo+1 <= excerptMaxRows {
			for p := lo; p <= hi && p < len(list); p++ {
				pick[int(list[p])] = true
			}
		} else {
			for _, c := range pos {
				for p := max(c-1, 0); p <= min(c+1, len(list)-1); p++ {
					pick[int(list[p])] = true
				}
			}
		}
	}
	if len(pick) == 0 {
		return nil
	}
	t0, t1 := time.Duration(1<<62), time.Duration(0)
	for i := range pick {
		t0, t1 = min(t0, m.ev[i].At), max(t1, m.end(&m.ev[i]))
	}
	involved := map[string]bool{}
	for _, id := range v.v.Instances {
		involved[id] = true
	}
	around := map[int]bool{}
	for i := range m.ev {
		e := &m.ev[i]
		if e.At > t1 {
			break
		}
		switch {
		case e.Lifecycle != nil && involved[e.Instance] && e.At >= t0:
			around[i] = true
		case e.Fault != nil && m.end(e) >= t0:
			hit := len(e.Fault.Targets) == 0
			for _, t := range e.Fault.Targets {
				hit = hit || involved[t]
			}
			if hit {
				around[i] = true
			}
		}
	}
	idx := make([]int, 0, len(pick)+len(around))
	for i := range pick {
		idx = append(idx, i)
	}
	for i := range around {
		if !pick[i] {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	rows := make([]excerptRow, 0, len(idx))
	for _, i := range idx {
		e := &m.ev[i]
		end := ""
		switch {
		case e.End == history.Infinity:
			end = "never (unknown)"
		case e.End > 0:
			end = fmtAt(e.End)
		}
		rows = append(rows, excerptRow{
			Seq: e.Seq, At: fmtAt(e.At), End: end, Kind: string(e.Kind), Instance: m.shortOf(e.Instance),
			Endpoint: e.Endpoint, Detail: m.humanize(describe(e)), Named: named[i], Context: around[i] && !pick[i],
		})
	}
	return rows
}

// zoomWindow returns the stretch of time a violation's zoomed timeline shows.
func (m *model) zoomWindow(v violInfo) (time.Duration, time.Duration) {
	lo, hi := v.v.At, v.v.At
	for _, s := range v.v.Events {
		if i, ok := m.bySeq[s]; ok {
			e := &m.ev[i]
			lo = min(lo, e.At)
			if e.End != history.Infinity {
				hi = max(hi, e.End)
			}
		}
	}
	pad := max((hi-lo)/2, 10*time.Millisecond)
	if hi == lo {
		pad = max(m.meta.PollInterval, 100*time.Millisecond)
	}
	return max(lo-pad, 0), min(hi+pad, m.dur)
}

// renderZoom draws the moments around one violation at a resolution where single polls and operations
// are visible: held (light), polls (solid, with their token), backend operations (thin bars below; amber
// when failed, dashed when the outcome is unknown). Events the violation names are outlined.
func renderZoom(m *model, v violInfo) string {
	if v.ep < 0 {
		return ""
	}
	from, to := m.zoomWindow(v)
	a := newTimeAxis(from, to)
	named := map[int64]bool{}
	for _, s := range v.v.Events {
		named[s] = true
	}
	set := map[int]bool{}
	for _, id := range v.v.Instances {
		if k, ok := m.instIdx[id]; ok {
			set[k] = true
		}
	}
	var evs []int
	for _, i := range m.epEvents[v.ep] {
		e := &m.ev[i]
		if a.contains(e.At, m.end(e)) && e.Instance != "" && (e.Poll != nil || e.Op != nil) {
			evs = append(evs, int(i))
			set[m.instIdx[e.Instance]] = true
		}
	}
	lanes := make([]int, 0, len(set))
	for k := range set {
		lanes = append(lanes, k)
	}
	slices.Sort(lanes)
	const laneH = 22.0
	top := 24.0
	h := top + float64(len(lanes))*laneH + 8
	var c canvas
	c.open("zoom", h)
	a.ticks(&c, 18, h-6, v.v.At, true)
	shadeFaults(&c, a, m.faults, top, h-6)
	laneY := map[int]float64{}
	for li, k := range lanes {
		y := top + float64(li)*laneH
		laneY[k] = y
		c.rect(a.x0, y+1, a.w, laneH-2, `class="row-bg"`)
		c.rect(a.x0-5, y+2, 3, laneH-4, `fill="`+m.insts[k].color+`"`)
		c.text(a.x0-9, y+14, `class="rowlabel" text-anchor="end"`, m.insts[k].short)
	}
	for _, s := range m.held[v.ep] {
		if y, ok := laneY[s.inst]; ok && a.contains(s.from, s.to) {
			x1, x2 := a.x(s.from), a.x(s.to)
			c.rect(x1, y+1, max(x2-x1, 1), laneH-2, `class="held" fill="`+m.insts[s.inst].color+`"`)
		}
	}
	for _, i := range evs {
		e := &m.ev[i]
		k := m.instIdx[e.Instance]
		y := laneY[k]
		x1, x2 := a.x(e.At), a.x(m.end(e))
		hl := ""
		if named[e.Seq] {
			hl = " hl"
		}
		if e.Poll != nil {
			class := pollClass(e.Poll.Outcome) + hl
			fill := ""
			if e.Poll.Outcome != history.PollRefused {
				fill = ` fill="` + m.insts[k].color + `"`
			}
			fmt.Fprintf(&c.b, `<g><title>%s</title>`, esc(fmt.Sprintf("#%d %s %s %s–%s", e.Seq, e.Instance, describe(e), fmtAt(e.At), fmtAt(e.End))))
			c.rect(x1, y+3, max(x2-x1, 2), 11, `class="`+class+`"`+fill)
			if tok := fmt.Sprintf("t%d", e.Poll.Token); e.Poll.Token > 0 && x2-x1 > labelBox(0, 0, false, labelFontPx["token"], tok).x1+4 {
				c.label("token", tok, labelPos{x1 + 3, y + 12, false})
			}
			c.raw("</g>")
			continue
		}
		class := "op"
		switch {
		case e.Op.Unknown || e.End == history.Infinity:
			class = "op unknown"
		case !e.Op.OK && e.Op.Err != "":
			class = "op fail"
		}
		fmt.Fprintf(&c.b, `<g><title>%s</title>`, esc(fmt.Sprintf("#%d %s %s", e.Seq, e.Instance, describe(e))))
		c.rect(x1, y+16, max(x2-x1, 1.5), 4, `class="`+class+hl+`"`)
		c.raw("</g>")
		if e.Op.Landed > 0 {
			drawLandings(&c, m, a, []int32{int32(i)}, func(int) (float64, bool) { return y + 14, true })
		}
	}
	vy := top + float64(len(lanes))*laneH/2
	for i := len(v.v.Instances) - 1; i >= 0; i-- {
		if k, ok := m.instIdx[v.v.Instances[i]]; ok {
			if y, ok := laneY[k]; ok {
				vy = y + 8
				break
			}
		}
	}
	x := a.x(v.v.At)
	c.line(x, top, x, h-6, `class="vline"`)
	c.diamond(x, vy, 7, "vmark-zoom", v.id(), violTip(v))
	return c.close()
}
