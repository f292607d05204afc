package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Overview layout.
const (
	smallFleetEndpoints = 12  // up to this many endpoints, every endpoint is drawn in detail
	maxCompactRows      = 120 // beyond this many endpoints, rows group several endpoints
	instRowH            = 14.0
	faultLaneH          = 14.0
	maxFaultLanes       = 4 // rows of fault labels above the timeline
)

// compactRow is one row of the overview: one endpoint, or a group of consecutive endpoints.
type compactRow struct {
	eps   []int
	label string
}

// compactRows groups endpoints into overview rows.
func (m *model) compactRows() []compactRow {
	g := 1
	if len(m.eps) > maxCompactRows {
		g = (len(m.eps) + 99) / 100
	}
	var rows []compactRow
	for i := 0; i < len(m.eps); i += g {
		j := min(i+g, len(m.eps))
		r := compactRow{label: m.eps[i]}
		if j-i > 1 {
			r.label = m.eps[i] + " … " + m.eps[j-1]
		}
		for k := i; k < j; k++ {
			r.eps = append(r.eps, k)
		}
		rows = append(rows, r)
	}
	return rows
}

// renderOverview draws the whole run: fault labels, the fleet (one row per instance), and every endpoint
// (compact rows, or detail blocks for a small fleet). Every listed violation has exactly one marker of
// class "vmark" here.
func renderOverview(m *model) string {
	a := newTimeAxis(0, m.dur)
	var body canvas
	body.placed = &placement{}
	y := 20.0
	// Fault labels, in lanes so they never overlap.
	xs, ws := make([]float64, len(m.faults)), make([]float64, len(m.faults))
	for i, f := range m.faults {
		xs[i], ws[i] = a.x(f.at), textWidth(f.label(m))*1.1
		if xs[i]+ws[i] > svgWidth { // near the right edge: the label ends at the fault instead
			xs[i] -= ws[i]
		}
	}
	lanes, nl := labelLanes(xs, ws)
	nl = min(nl, maxFaultLanes)
	labelTop := y
	y += float64(nl)*faultLaneH + 4
	shadeTop := y

	// Fleet rows.
	body.text(8, y+10, `class="section"`, map[bool]string{false: "instances", true: "candidates"}[m.election()])
	y += 14
	for k := range m.insts {
		drawInstanceRow(&body, m, a, k, y)
		y += instRowH
	}
	y += 10
	y = drawLagRows(&body, m, a, y)

	// Run-wide violations (no endpoint).
	var runWide []violInfo
	for _, v := range m.viols {
		if v.ep < 0 {
			runWide = append(runWide, v)
		}
	}
	if len(runWide) > 0 {
		body.raw(`<g class="run-row">`)
		body.text(gutterLeft-6, y+9, `class="rowlabel" text-anchor="end"`, "run-wide")
		body.rect(a.x0, y, a.w, 12, `class="row-bg"`)
		markViolations(&body, m, a, runWide, y+6, 6, "vmark", true)
		body.raw(`</g>`)
		y += 18
	}

	// Endpoints.
	body.text(8, y+10, `class="section"`, fmt.Sprintf("%ss (%d)", m.epWord(), len(m.eps)))
	y += 14
	if len(m.eps) <= smallFleetEndpoints {
		all := make([]int, len(m.eps))
		for i := range all {
			all[i] = i
		}
		y = drawDetailBlocks(&body, m, a, all, y, "vmark")
	} else {
		y = drawCompactRows(&body, m, a, y)
	}
	shadeBottom := y
	// Promotion captions go under the chart, in lanes of their own when they come close together.
	pxs, pws := make([]float64, len(m.promotions)), make([]float64, len(m.promotions))
	for i, p := range m.promotions {
		pxs[i] = a.x(p.at) + 2
		pws[i] = labelBox(0, 0, false, labelFontPx["promotion-label"], "promoted "+p.what).x1 + 4
		if pxs[i]+pws[i] > svgWidth {
			pxs[i] -= pws[i] + 4
		}
	}
	plane, npl := labelLanes(pxs, pws)
	y += 20 + 12*float64(max(npl-1, 0))

	var c canvas
	c.placed = body.placed
	c.open("overview", y)
	c.raw(hatchDefs("hatch"))
	a.ticks(&c, 16, shadeBottom, 0, false)
	shadeFaults(&c, a, m.faults, shadeTop, shadeBottom)
	for i, f := range m.faults {
		if lanes[i] >= maxFaultLanes { // crowded: the shading's tooltip and the fault table still name it
			continue
		}
		ly := labelTop + float64(lanes[i])*faultLaneH + 10
		x, tx, anchor := a.x(f.at), xs[i]+2, "start"
		if xs[i] < x {
			tx, anchor = x-2, "end"
		}
		c.line(x, ly+2, x, shadeTop, `class="fault-tick"`)
		c.label("fault-label", f.label(m), labelPos{tx, ly, anchor == "end"})
	}
	// Promotions of a replicated backend: a line through the fleet and endpoints, labelled at its foot.
	for i, p := range m.promotions {
		x := a.x(p.at)
		c.line(x, shadeTop, x, shadeBottom, `class="promotion"`)
		ly := shadeBottom + 12 + 12*float64(plane[i])
		if pxs[i] < x {
			c.label("promotion-label", "promoted "+p.what, labelPos{x - 2, ly, true})
		} else {
			c.label("promotion-label", "promoted "+p.what, labelPos{x + 2, ly, false})
		}
	}
	if n := len(m.viols); n > 0 && n <= 12 { // few violations: a guide line from the axis to each marker
		for _, v := range m.viols {
			c.line(a.x(v.v.At), 16, a.x(v.v.At), shadeBottom, `class="vguide"`)
		}
	}
	c.raw(body.b.String())
	return c.close()
}

// hatchDefs defines the hatch pattern used for paused instances.
func hatchDefs(id string) string {
	return `<defs><pattern id="` + id + `" patternUnits="userSpaceOnUse" width="5" height="5" patternTransform="rotate(45)">` +
		`<rect width="2" height="5" fill="#333" opacity="0.45"/></pattern></defs>`
}

// drawInstanceRow draws one instance: when it ran (solid), was paused (hatched), crashed (×) or stopped
// (|), outlines the faults that targeted it, and marks when its commands held on the wire landed.
func drawInstanceRow(c *canvas, m *model, a timeAxis, k int, y float64) {
	in := m.insts[k]
	fmt.Fprintf(&c.b, `<g class="inst-row" data-instance="%s"><title>%s</title>`, esc(in.id), esc(in.id))
	c.rect(8, y+2, 10, 10, `fill="`+in.color+`"`)
	c.text(gutterLeft-6, y+11, `class="rowlabel" text-anchor="end"`, in.short)
	c.rect(a.x0, y+2, a.w, 10, `class="row-bg"`)
	for _, l := range in.life {
		x1, x2 := a.x(l.from), a.x(l.to)
		c.rect(x1, y+3, max(x2-x1, 1), 8, `fill="`+in.color+`"`)
		if l.paused {
			c.rect(x1, y+3, max(x2-x1, 1), 8, `fill="url(#hatch)" class="paused"`)
		}
	}
	for _, mk := range in.marks {
		x := a.x(mk.at)
		if mk.change == "crashed" {
			c.text(x, y+11.5, `class="crash" text-anchor="middle"`, "✕")
		} else {
			c.line(x, y+1, x, y+13, `class="stop"`)
		}
	}
	for _, f := range m.faults {
		for _, t := range f.targets {
			if t == in.id {
				x1, x2 := a.x(f.at), a.x(f.end)
				c.rect(x1, y+1, max(x2-x1, 2), 12, `class="fault-target"`)
			}
		}
	}
	// Its commands held on the wire, whatever they concern: when each landed.
	drawLandings(c, m, a, in.landed, func(j int) (float64, bool) { return y + 11, j == k })
	c.raw("</g>")
}

// drawCompactRows draws one thin row per endpoint (or group) coloured by holder, and the violation
// markers. It returns the y below the last row.
func drawCompactRows(c *canvas, m *model, a timeAxis, y float64) float64 {
	rows := m.compactRows()
	rowH := 8.0
	switch {
	case len(rows) <= 40:
		rowH = 12
	case len(rows[0].eps) > 1:
		rowH = 10
	}
	byEp := map[int][]violInfo{}
	for _, v := range m.viols {
		if v.ep >= 0 {
			byEp[v.ep] = append(byEp[v.ep], v)
		}
	}
	labels := rowLabels(rows, rowH, func(r compactRow) bool {
		for _, ep := range r.eps {
			if len(byEp[ep]) > 0 {
				return true
			}
		}
		return false
	})
	fontPx := min(rowH, 11)
	for ri, r := range rows {
		fmt.Fprintf(&c.b, `<g class="ep-row" data-endpoints="%d"><title>%s</title>`, len(r.eps), esc(r.label))
		switch labels[ri] {
		case 1:
			c.text(gutterLeft-6, y+rowH-1.5, fmt.Sprintf(`class="rowlabel" font-size="%s" text-anchor="end"`, num(fontPx)), r.label)
		case 2:
			c.text(gutterLeft-6, y+rowH-1, `class="rowlabel hot" text-anchor="end"`, r.label)
		}
		c.rect(a.x0, y, a.w, rowH-1, `class="row-bg"`)
		stripe := (rowH - 1) / float64(len(r.eps))
		for si, ep := range r.eps {
			drawHoldingStrip(c, m, a, ep, y+float64(si)*stripe, stripe, len(r.eps) == 1)
		}
		var vs []violInfo
		for _, ep := range r.eps {
			vs = append(vs, byEp[ep]...)
		}
		markViolations(c, m, a, vs, y+(rowH-1)/2, max(rowH*0.6, 5), "vmark", len(m.viols) <= 12)
		c.raw("</g>")
		y += rowH
	}
	return y
}

// rowLabels decides which compact rows carry a label: 2 for rows with violations (emphasised), 1 for
// ordinary labelled rows, 0 for none. Rows of 10 units or more are all labelled. Thinner rows never have
// labels on neighbouring rows, so labels cannot collide: rows with violations are labelled first, as
// spacing allows, then, left to right, every row that still has room.
func rowLabels(rows []compactRow, rowH float64, hot func(compactRow) bool) []int {
	out := make([]int, len(rows))
	thin := rowH < 10
	free := func(i int) bool {
		return !thin || ((i == 0 || out[i-1] == 0) && (i+1 == len(rows) || out[i+1] == 0))
	}
	for i, r := range rows {
		if hot(r) && free(i) {
			out[i] = 2
		}
	}
	for i := range rows {
		if out[i] == 0 && free(i) {
			out[i] = 1
		}
	}
	return out
}

// drawHoldingStrip draws an endpoint's holdings in a strip, merging what falls within a pixel. With
// split set, an instance holding while another also holds is drawn in the strip's lower half.
func drawHoldingStrip(c *canvas, m *model, a timeAxis, ep int, y, h float64, split bool) {
	type pend struct {
		x1, x2 float64
		inst   int
		lower  bool
	}
	var ends []time.Duration // per overlap lane: end of its latest span
	open := map[[2]int]*pend{}
	flush := func(p *pend) {
		py, ph := y, h
		if p.lower {
			py, ph = y+h/2, h/2
		}
		c.rect(p.x1, py, max(p.x2-p.x1, 0.8), ph, `fill="`+m.insts[p.inst].color+`"`)
	}
	for _, s := range m.held[ep] {
		lane := 0
		if split {
			for lane = 0; lane < len(ends) && ends[lane] > s.from; lane++ {
			}
			if lane == len(ends) {
				ends = append(ends, s.to)
			} else {
				ends[lane] = s.to
			}
		}
		x1, x2 := a.x(s.from), a.x(s.to)
		key := [2]int{s.inst, min(lane, 1)}
		if p := open[key]; p != nil {
			if x1 <= p.x2+0.6 {
				p.x2 = max(p.x2, x2)
				continue
			}
			flush(p)
		}
		open[key] = &pend{x1: x1, x2: x2, inst: s.inst, lower: lane > 0}
	}
	for inst := range m.insts {
		for l := range 2 {
			if p := open[[2]int{inst, l}]; p != nil {
				flush(p)
			}
		}
	}
}

// violTip describes a violation in one line.
func violTip(v violInfo) string {
	s := fmt.Sprintf("%s %s at %s", v.id(), v.invariant, fmtAt(v.v.At))
	if v.v.Endpoint != "" {
		s += " on " + v.v.Endpoint
	}
	if len(v.v.Instances) > 0 {
		s += " (" + strings.Join(v.v.Instances, ", ") + ")"
	}
	return roundDurations(s + ": " + oneLine(v.v.Message, 200))
}

// markViolations marks violations on one row at height y: a diamond (class) for a violation that stands
// alone, a density band (class "vband", data-count the violations it stands for) for a run of violations
// closer than two poll intervals (or a few pixels) to each other, so every violation is marked however
// many there are. With label set, lone diamonds carry their ID.
func markViolations(c *canvas, m *model, a timeAxis, vs []violInfo, y, r float64, class string, label bool) {
	if len(vs) == 0 {
		return
	}
	vs = slices.Clone(vs)
	slices.SortStableFunc(vs, func(p, q violInfo) int { return cmp.Compare(p.v.At, q.v.At) })
	gap := max(6, a.x(a.from+2*m.meta.PollInterval)-a.x0)
	flush := func(run []violInfo) {
		if len(run) == 1 {
			v := run[0]
			x := a.x(v.v.At)
			c.diamond(x, y, r, class, v.id(), violTip(v))
			if label {
				c.label("vlabel", v.id(), labelPos{x + r + 2, y + 4, false}, labelPos{x - r - 2, y + 4, true})
			}
			return
		}
		x1, x2 := a.x(run[0].v.At), a.x(run[len(run)-1].v.At)
		tip := fmt.Sprintf("%d violations %s (%s to %s); the first: %s", len(run), m.whenText(run[0].v.At, run[len(run)-1].v.At),
			run[0].id(), run[len(run)-1].id(), violTip(run[0]))
		fmt.Fprintf(&c.b, `<a href="#%s"><rect class="vband" data-count="%d" x="%s" y="%s" width="%s" height="%s" rx="2"><title>%s</title></rect></a>`,
			run[0].id(), len(run), num(x1-r/2), num(y-r*0.55), num(x2-x1+r), num(r*1.1), esc(tip))
	}
	start := 0
	for i := 1; i <= len(vs); i++ {
		if i == len(vs) || a.x(vs[i].v.At)-a.x(vs[i-1].v.At) > gap {
			flush(vs[start:i])
			start = i
		}
	}
}
