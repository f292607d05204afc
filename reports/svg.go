package reports

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Drawing geometry shared by every chart, in SVG user units (pixels at 100% zoom).
const (
	svgWidth   = 1180.0
	gutterLeft = 150.0 // room for row labels
	gutterRite = 16.0
	plotWidth  = svgWidth - gutterLeft - gutterRite
)

// canvas accumulates SVG markup. Every text it writes is escaped, so the result is well-formed XML.
// Canvases drawn to be joined into one chart share their placed labels.
type canvas struct {
	b      strings.Builder
	placed *placement
}

// num formats a coordinate with one decimal.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// open starts an <svg> element; view names the chart for tests and styles.
func (c *canvas) open(view string, h float64) {
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-view="%s" width="%s" height="%s" viewBox="0 0 %s %s" role="img">`,
		view, num(svgWidth), num(h), num(svgWidth), num(h))
}

func (c *canvas) close() string {
	c.b.WriteString("</svg>")
	return c.b.String()
}

func (c *canvas) raw(s string) { c.b.WriteString(s) }

// rect draws a rectangle; attrs is inserted verbatim (callers build it from constants and escaped text).
func (c *canvas) rect(x, y, w, h float64, attrs string) {
	fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" %s/>`, num(x), num(y), num(max(w, 0)), num(max(h, 0)), attrs)
}

func (c *canvas) line(x1, y1, x2, y2 float64, attrs string) {
	fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>`, num(x1), num(y1), num(x2), num(y2), attrs)
}

// text draws escaped text.
func (c *canvas) text(x, y float64, attrs, s string) {
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" %s>%s</text>`, num(x), num(y), attrs, esc(s))
}

// title attaches a tooltip to the element opened just before (use inside a <g>).
func (c *canvas) title(s string) { fmt.Fprintf(&c.b, "<title>%s</title>", esc(s)) }

// diamond draws a violation marker centred at (x, y), linked to its entry in the page.
func (c *canvas) diamond(x, y, r float64, class, anchor, tip string) {
	fmt.Fprintf(&c.b, `<a href="#%s"><path class="%s" d="M%s %sL%s %sL%s %sL%s %sZ"><title>%s</title></path></a>`,
		anchor, class, num(x), num(y-r), num(x+r), num(y), num(x), num(y+r), num(x-r), num(y), esc(tip))
}

// timeAxis maps run time onto the plot's x range.
type timeAxis struct {
	from, to time.Duration
	x0, w    float64
}

func newTimeAxis(from, to time.Duration) timeAxis {
	if to <= from {
		to = from + time.Millisecond
	}
	return timeAxis{from: from, to: to, x0: gutterLeft, w: plotWidth}
}

// x returns the position of t, clamped to the plot.
func (a timeAxis) x(t time.Duration) float64 {
	t = min(max(t, a.from), a.to)
	return a.x0 + a.w*float64(t-a.from)/float64(a.to-a.from)
}

// contains reports whether [from, to] meets the axis.
func (a timeAxis) contains(from, to time.Duration) bool { return to >= a.from && from <= a.to }

// ticks draws vertical grid lines between y0 and y1 with labels above y0. Labels give run time, or with
// relative set the offset from origin ("-20ms", "+40ms"), ticks then falling on round offsets.
func (a timeAxis) ticks(c *canvas, y0, y1 float64, origin time.Duration, relative bool) {
	if !relative {
		origin = 0
	}
	step := time.Duration(niceStep(float64(a.to-a.from), 10))
	if step <= 0 {
		step = 1
	}
	k := (a.from - origin) / step
	if origin+k*step < a.from {
		k++
	}
	for t := origin + k*step; t <= a.to; t += step {
		x := a.x(t)
		c.line(x, y0, x, y1, `class="grid"`)
		var txt string
		switch d := t - origin; {
		case !relative:
			txt = fmtDur(t)
		case d > 0:
			txt = "+" + fmtDur(d)
		case d < 0:
			txt = "−" + fmtDur(-d)
		default:
			txt = "0"
		}
		c.text(x, y0-4, `class="tick" text-anchor="middle"`, txt)
	}
}

// shadeFaults draws one shaded window per fault between y0 and y1 (class "fault"), with a tooltip.
func shadeFaults(c *canvas, a timeAxis, faults []faultInfo, y0, y1 float64) {
	for _, f := range faults {
		if !a.contains(f.at, f.end) {
			continue
		}
		x1, x2 := a.x(f.at), a.x(f.end)
		fmt.Fprintf(&c.b, `<rect class="fault" data-fault="%s" x="%s" y="%s" width="%s" height="%s"><title>%s</title></rect>`,
			esc(f.id), num(x1), num(y0), num(max(x2-x1, 2)), num(y1-y0), esc(faultTip(f)))
	}
}

// faultTip describes a fault in one line.
func faultTip(f faultInfo) string {
	s := fmt.Sprintf("%s %s", f.id, f.name)
	if len(f.targets) > 0 {
		s += " on " + strings.Join(f.targets, ", ")
	} else {
		s += " on the backend / every instance"
	}
	s += fmt.Sprintf(", %s–%s", fmtAt(f.at), fmtAt(f.end))
	if f.params != "" {
		s += " (" + f.params + ")"
	}
	return s
}

// labelLanes places labels left to right in the first lane where they fit, returning each one's lane and
// the number of lanes used.
func labelLanes(xs []float64, widths []float64) ([]int, int) {
	var ends []float64
	lanes := make([]int, len(xs))
	for i, x := range xs {
		placed := false
		for l, e := range ends {
			if x >= e {
				lanes[i], ends[l], placed = l, x+widths[i], true
				break
			}
		}
		if !placed {
			lanes[i] = len(ends)
			ends = append(ends, x+widths[i])
		}
	}
	return lanes, len(ends)
}

// textWidth estimates the width of s at the 11px label font.
func textWidth(s string) float64 { return 6.2*float64(len([]rune(s))) + 6 }

// Labels never overlap. Every label a chart draws beside a marker (violation IDs, takeover latencies,
// fault and promotion captions, terms and tokens) is placed through its canvas: at the first of its
// candidate positions where its box meets no label placed before on the same chart, or not at all (the
// marker keeps its tooltip and link). Boxes are estimated generously, so that no font draws them larger.

// box is the extent of a label.
type box struct{ x0, y0, x1, y1 float64 }

func (b box) overlaps(o box) bool { return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 }

// labelFontPx are the label classes' font sizes, as style.css sets them.
var labelFontPx = map[string]float64{
	"vlabel": 10, "tolabel": 10.5, "fault-label": 11, "promotion-label": 10, "term": 9, "token": 9,
}

// labelBox estimates the box of s drawn with its baseline at (x, y), anchored at its start or (end) its
// end, in a font of size px: 0.62 em a character, wider than the digits and letters of any sans-serif
// face, bold included, and from the ascender (0.85 em above) to the descender (0.25 em below).
func labelBox(x, y float64, end bool, size float64, s string) box {
	w := 0.62 * size * float64(len([]rune(s)))
	if end {
		x -= w
	}
	return box{x, y - 0.85*size, x + w, y + 0.25*size}
}

// labelPos is a candidate position for a label: its baseline's start, or its end when end is set.
type labelPos struct {
	x, y float64
	end  bool
}

// placement is the labels drawn on one chart, shared by the canvases it is assembled from.
type placement struct{ boxes []box }

// label draws s (class is one of labelFontPx) at the first free position among at, and reports
// whether there was one.
func (c *canvas) label(class, s string, at ...labelPos) bool {
	if c.placed == nil {
		c.placed = &placement{}
	}
	size := labelFontPx[class]
	for _, p := range at {
		b := labelBox(p.x, p.y, p.end, size, s)
		if b.x0 < 0 || b.x1 > svgWidth || slices.ContainsFunc(c.placed.boxes, b.overlaps) {
			continue
		}
		c.placed.boxes = append(c.placed.boxes, b)
		anchor := ""
		if p.end {
			anchor = ` text-anchor="end"`
		}
		c.text(p.x, p.y, `class="`+class+`"`+anchor, s)
		return true
	}
	return false
}

// reserve marks a box as taken by a label drawn otherwise (in lanes computed beforehand).
func (c *canvas) reserve(b box) {
	if c.placed == nil {
		c.placed = &placement{}
	}
	c.placed.boxes = append(c.placed.boxes, b)
}
