package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// Detail layout.
const (
	maxDetailEndpoints = 12
	detailHeadH        = 18.0
	detailLaneH        = 13.0
	tightHeadH         = 14.0 // the overview of a small fleet draws tighter blocks, to fit one screen
	tightLaneH         = 10.5
)

// detailEndpoints picks the endpoints worth drawing in detail: those with violations first, then the
// slowest takeover of each fault in turn. It returns them and how many candidates did not fit.
func (m *model) detailEndpoints(limit int) ([]int, int) {
	seen := map[int]bool{}
	var out []int
	candidates := 0
	add := func(ep int) {
		if ep < 0 || seen[ep] {
			return
		}
		seen[ep] = true
		candidates++
		if len(out) < limit {
			out = append(out, ep)
		}
	}
	for _, v := range m.viols {
		add(v.ep)
	}
	lists := make([][]checker.Failover, len(m.groups))
	for i, g := range m.groups {
		lists[i] = slices.Clone(g.items)
		sort.SliceStable(lists[i], func(a, b int) bool { return slowness(lists[i][a]) > slowness(lists[i][b]) })
	}
	for more := true; more; {
		more = false
		for i := range lists {
			if len(lists[i]) == 0 {
				continue
			}
			more = true
			if ep, ok := m.epIdx[lists[i][0].Endpoint]; ok {
				add(ep)
			}
			lists[i] = lists[i][1:]
		}
	}
	return out, candidates - len(out)
}

// slowness orders takeovers worst first; a takeover that never happened is the worst.
func slowness(f checker.Failover) int64 {
	if f.Latency < 0 {
		return 1 << 62
	}
	return int64(f.Latency)
}

// renderDetail draws the chosen endpoints in detail over the whole run (markers of class "vmark-detail").
func renderDetail(m *model, eps []int) string {
	a := newTimeAxis(0, m.dur)
	var body canvas
	y := drawDetailBlocks(&body, m, a, eps, 24, "vmark-detail")
	var c canvas
	c.open("detail", y+8)
	a.ticks(&c, 18, y, 0, false)
	shadeFaults(&c, a, m.faults, 20, y)
	c.raw(body.b.String())
	return c.close()
}

// laneInstances returns the instances that held or polled endpoint ep, in fleet order.
func (m *model) laneInstances(ep int) []int {
	set := map[int]bool{}
	for _, s := range m.held[ep] {
		set[s.inst] = true
	}
	for _, i := range m.epEvents[ep] {
		if e := &m.ev[i]; e.Poll != nil && e.Instance != "" {
			set[m.instIdx[e.Instance]] = true
		}
	}
	out := make([]int, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// drawDetailBlocks draws each endpoint as a block: a header with the endpoint's name and its takeovers
// (fault start to first poll by a live instance, with the latency), then one lane per instance that
// held (light) or polled (solid marks) it. Refused polls are outlined in teal (fencing worked: safe). It returns the y below.
func drawDetailBlocks(c *canvas, m *model, a timeAxis, eps []int, y float64, markerClass string) float64 {
	fos := map[string][]checker.Failover{}
	for _, f := range m.rep.Failovers {
		fos[f.Endpoint] = append(fos[f.Endpoint], f)
	}
	headH, laneH, gapH := detailHeadH, detailLaneH, 6.0
	if markerClass == "vmark" {
		headH, laneH, gapH = tightHeadH, tightLaneH, 4
	}
	viols := map[int][]violInfo{}
	for _, v := range m.viols {
		viols[v.ep] = append(viols[v.ep], v)
	}
	for _, ep := range eps {
		lanes := m.laneInstances(ep)
		if len(lanes) == 0 {
			lanes = []int{-1}
		}
		fmt.Fprintf(&c.b, `<g class="ep-detail" data-endpoint="%s">`, esc(m.eps[ep]))
		c.line(8, y+0.5, svgWidth-gutterRite, y+0.5, `class="sep"`)
		c.text(8, y+13, `class="eplabel"`, m.eps[ep])
		var used [][2]float64 // label extents in this header, so labels never overlap
		for _, f := range fos[m.eps[ep]] {
			drawTakeover(c, a, f, y+9, &used)
		}
		y += headH
		laneY := map[int]float64{}
		for li, inst := range lanes {
			ly := y + float64(li)*laneH
			laneY[inst] = ly
			c.rect(a.x0, ly+1, a.w, laneH-2, `class="row-bg"`)
			if inst >= 0 {
				in := m.insts[inst]
				c.rect(a.x0-5, ly+2, 3, laneH-4, `fill="`+in.color+`"`)
				c.text(a.x0-9, ly+10, `class="rowlabel" text-anchor="end"`, in.short)
			}
		}
		var terms canvas // an election's leadership is labelled with its term where there is room
		if c.placed == nil {
			c.placed = &placement{}
		}
		terms.placed = c.placed
		for _, s := range m.held[ep] {
			x1, x2 := a.x(s.from), a.x(s.to)
			fmt.Fprintf(&c.b, `<rect class="held" fill="%s" x="%s" y="%s" width="%s" height="%s">`,
				m.insts[s.inst].color, num(x1), num(laneY[s.inst]+1), num(max(x2-x1, 1)), num(laneH-2))
			if m.election() && s.token > 0 {
				c.title(fmt.Sprintf("%s leader with term %d, %s", m.insts[s.inst].short, s.token, m.whenText(s.from, s.to)))
				if label := "term " + shortToken(s.token); x2-x1 > labelBox(0, 0, false, labelFontPx["term"], label).x1+4 {
					terms.label("term", label, labelPos{x1 + 3, laneY[s.inst] + laneH - 2.5, false})
				}
			}
			c.raw("</rect>")
		}
		drawDetailPolls(c, m, a, ep, laneY, laneH)
		drawLandings(c, m, a, m.epEvents[ep], func(k int) (float64, bool) {
			ly, ok := laneY[k]
			return ly + laneH - 2.5, ok
		})
		c.raw(terms.b.String())
		// Violations are marked on the lane of the instance they blame; validity's (a poll outside its
		// own lease) low in the lane and smaller, so they do not hide two holders at once.
		type spot struct {
			y, r float64
		}
		byLane := map[spot][]violInfo{}
		var spots []spot
		for _, v := range viols[ep] {
			sp := spot{y + float64(len(lanes))*laneH/2, 6}
			k := v.off
			if k < 0 && len(v.v.Instances) > 0 {
				k = m.instIdx[v.v.Instances[len(v.v.Instances)-1]]
			}
			if ly, ok := laneY[k]; ok {
				sp.y = ly + laneH/2
			}
			if v.invariant == checker.InvValidity {
				sp = spot{sp.y + laneH/2 - 2, 3}
			}
			if _, ok := byLane[sp]; !ok {
				spots = append(spots, sp)
			}
			byLane[sp] = append(byLane[sp], v)
		}
		for _, sp := range spots {
			markViolations(c, m, a, byLane[sp], sp.y, sp.r, markerClass, len(m.viols) <= 30)
		}
		c.raw("</g>")
		y += float64(len(lanes))*laneH + gapH
	}
	return y
}

// drawTakeover draws a takeover bracket from the fault to the first poll by a live instance, labelled
// with the latency right of the bracket, or left of it, or (when both would overlap an earlier label)
// only in the tooltip.
func drawTakeover(c *canvas, a timeAxis, f checker.Failover, y float64, used *[][2]float64) {
	x1 := a.x(f.FaultAt)
	class, label := "takeover", "takeover "+fmtDur(f.Latency)
	x2 := a.x(f.PolledAt)
	switch {
	case f.Latency < 0:
		class, label, x2 = "takeover late", "no takeover", a.x(a.to)
	case f.Bound > 0 && f.Latency > f.Bound:
		class, label = "takeover late", label+" > bound "+fmtDur(f.Bound)
	}
	fmt.Fprintf(&c.b, `<g class="%s"><title>%s</title>`, class, esc(fmt.Sprintf("%s %s: %s → %s, %s",
		f.FaultID, f.Fault, f.From, orDash(f.To), label)))
	c.line(x1, y, x2, y, "")
	c.line(x1, y-4, x1, y+4, "")
	c.line(x2, y-4, x2, y+4, "")
	free := func(l, r float64) bool {
		if l < gutterLeft-40 || r > svgWidth {
			return false
		}
		for _, u := range *used {
			if l < u[1] && u[0] < r {
				return false
			}
		}
		return true
	}
	w := labelBox(0, 0, false, labelFontPx["tolabel"], label).x1
	var at []labelPos // right of the bracket, or left of it, clear of the header's other brackets
	if free(x2+4, x2+4+w) {
		at = append(at, labelPos{x2 + 4, y + 4, false})
	}
	if free(x1-4-w, x1-4) {
		at = append(at, labelPos{x1 - 4, y + 4, true})
	}
	if c.label("tolabel", label, at...) {
		b := c.placed.boxes[len(c.placed.boxes)-1]
		*used = append(*used, [2]float64{b.x0, b.x1})
	}
	*used = append(*used, [2]float64{x1, x2})
	c.raw("</g>")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// drawDetailPolls draws the polls of endpoint ep, merging neighbours closer than a pixel.
func drawDetailPolls(c *canvas, m *model, a timeAxis, ep int, laneY map[int]float64, laneH float64) {
	type pend struct {
		x1, x2 float64
		class  string
		inst   int
	}
	open := map[int]*pend{}
	flush := func(p *pend) {
		attrs := `class="` + p.class + `"`
		if p.class != "poll refused" {
			attrs += ` fill="` + m.insts[p.inst].color + `"`
		}
		c.rect(p.x1, laneY[p.inst]+2.5, max(p.x2-p.x1, 1.5), laneH-5, attrs)
	}
	for _, i := range m.epEvents[ep] {
		e := &m.ev[i]
		if e.Poll == nil || e.Instance == "" {
			continue
		}
		inst := m.instIdx[e.Instance]
		class := pollClass(e.Poll.Outcome)
		x1, x2 := a.x(e.At), a.x(m.end(e))
		if p := open[inst]; p != nil {
			if p.class == class && x1 <= p.x2+0.5 {
				p.x2 = max(p.x2, x2)
				continue
			}
			flush(p)
		}
		open[inst] = &pend{x1: x1, x2: x2, class: class, inst: inst}
	}
	keys := make([]int, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		flush(open[k])
	}
}

// drawLandings draws, for each operation among evs whose command was held on the wire and landed late
// (history.Op.Landed), a line from its call to its landing and a mark at the landing, whose tooltip
// says when it landed. laneY gives the height of an instance's line (by index), false when the
// instance has no lane here.
func drawLandings(c *canvas, m *model, a timeAxis, evs []int32, laneY func(int) (float64, bool)) {
	for _, i := range evs {
		e := &m.ev[i]
		if e.Op == nil || e.Op.Landed <= 0 || e.Instance == "" {
			continue
		}
		y, ok := laneY(m.instIdx[e.Instance])
		if !ok {
			continue
		}
		x1, x2 := a.x(e.At), a.x(e.Op.Landed)
		fmt.Fprintf(&c.b, `<g class="landed" data-seq="%d"><title>%s</title>`, e.Seq, esc(landedTip(m, e)))
		c.line(x1, y, x2, y, `class="landed-wait"`)
		c.line(x1, y-2, x1, y+2, `class="landed-wait"`)
		fmt.Fprintf(&c.b, `<path class="landed-mark" d="M%s %sL%s %sL%s %sZ"/>`, // a triangle pointing down at it
			num(x2-3), num(y-4), num(x2+3), num(y-4), num(x2), num(y+1))
		c.raw("</g>")
	}
}

// landedTip describes a held command's landing: "landed at 12.430s, 400ms after its call: ...".
func landedTip(m *model, e *history.Event) string {
	who := e.Instance
	if k, ok := m.instIdx[who]; ok {
		who = m.insts[k].short
	}
	return fmt.Sprintf("landed at %s, %s after its call at %s: #%d %s %s", fmtAt(e.Op.Landed), fmtDur(e.Op.Landed-e.At),
		fmtAt(e.At), e.Seq, who, describe(e))
}

// pollClass is a poll's CSS class by outcome.
func pollClass(o history.PollOutcome) string {
	switch o {
	case history.PollRefused:
		return "poll refused"
	case history.PollFailed, history.PollCancelled:
		return "poll failed"
	default:
		return "poll"
	}
}

// describe summarises an event in one line for tooltips and excerpts.
func describe(e *history.Event) string {
	var b strings.Builder
	switch {
	case e.Op != nil:
		o := e.Op
		fmt.Fprintf(&b, "%s %s", o.Kind, o.Key)
		if o.Owner != "" {
			fmt.Fprintf(&b, " owner=%s", o.Owner)
		}
		if o.TTL > 0 {
			fmt.Fprintf(&b, " ttl=%s", fmtDur(o.TTL))
		}
		switch {
		case o.Unknown:
			b.WriteString(" → unknown outcome")
		case o.OK && o.NotReplicated:
			b.WriteString(" → ok, not confirmed by WAIT (not counted)")
		case o.OK:
			b.WriteString(" → ok")
		default:
			b.WriteString(" → not done")
		}
		if o.Landed > 0 {
			fmt.Fprintf(&b, ", landed at %s", fmtAt(o.Landed))
		}
		if o.Value != "" {
			fmt.Fprintf(&b, " value=%s", o.Value)
		}
		if o.Err != "" {
			fmt.Fprintf(&b, " err=%q", o.Err)
		}
		if o.Command != "" {
			fmt.Fprintf(&b, " [%s]", oneLine(o.Command, 80))
		}
	case e.Poll != nil:
		fmt.Fprintf(&b, "poll token=%d → %s", e.Poll.Token, e.Poll.Outcome)
		if e.Poll.MaxToken > 0 {
			fmt.Fprintf(&b, " (max token seen %d)", e.Poll.MaxToken)
		}
	case e.Belief != nil:
		if e.Belief.Held {
			b.WriteString("believes it holds")
		} else {
			b.WriteString("stops believing it holds")
		}
		if e.Belief.Token > 0 {
			fmt.Fprintf(&b, " token=%d", e.Belief.Token)
		}
		if e.Belief.Reason != "" {
			fmt.Fprintf(&b, " (%s)", e.Belief.Reason)
		}
	case e.Fault != nil:
		f := faultInfo{id: e.Fault.ID, name: e.Fault.Name, targets: e.Fault.Targets, at: e.At, end: e.End, params: faultParams(e.Fault.Params)}
		if e.End == history.Infinity || e.End < e.At {
			f.end = e.At
		}
		b.WriteString("fault " + faultTip(f))
	case e.Lifecycle != nil:
		b.WriteString(string(e.Lifecycle.Change))
		if e.Lifecycle.ReplacedBy != "" {
			fmt.Fprintf(&b, " (replaced by %s)", e.Lifecycle.ReplacedBy)
		}
	case e.Session != nil:
		b.WriteString("session " + string(e.Session.Change))
	case e.Note != "":
		b.WriteString(e.Note)
	}
	return b.String()
}

// shortToken abbreviates a long token or term (an election's terms come from the backend's clock) to
// its last digits: "…549261".
func shortToken(t uint64) string {
	s := fmt.Sprint(t)
	if len(s) > 6 {
		return "…" + s[len(s)-6:]
	}
	return s
}
