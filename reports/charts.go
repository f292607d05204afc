package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// Chart layout.
const (
	chartTop    = 24.0
	chartPlotH  = 170.0
	chartBottom = 14.0
	maxBuckets  = 240
)

// yAxis maps a value onto the plot's y range.
type yAxis struct {
	max      float64
	top, hgt float64
}

func (y yAxis) y(v float64) float64 { return y.top + y.hgt*(1-min(max(v/y.max, 0), 1)) }

// draw draws horizontal grid lines with labels, in the given unit.
func (y yAxis) draw(c *canvas, a timeAxis, unit string) {
	step := niceStep(y.max, 5)
	if step < 1 && unit == "" {
		step = 1
	}
	for v := 0.0; v <= y.max+1e-9; v += step {
		py := y.y(v)
		c.line(a.x0, py, a.x0+a.w, py, `class="grid"`)
		c.text(a.x0-6, py+4, `class="tick" text-anchor="end"`, trimZeros(fmt.Sprintf("%.1f", v))+unit)
	}
}

// newYAxis returns an axis from 0 to a round value at or above top.
func newYAxis(top float64) yAxis {
	if top <= 0 {
		top = 1
	}
	step := niceStep(top, 5)
	return yAxis{max: math.Ceil(top/step) * step, top: chartTop, hgt: chartPlotH}
}

// renderBalance draws the endpoints each instance held over time (one step line per instance), the ideal
// share E/N (dashed) with its ±1 band, steady windows (pale green) and fault windows.
func renderBalance(m *model) string {
	samples := m.rep.Balance
	if len(samples) == 0 {
		return ""
	}
	a := newTimeAxis(0, m.dur)
	top := 0.0
	for _, s := range samples {
		top = max(top, s.Ideal+1)
		for _, n := range s.PerInst {
			top = max(top, float64(n))
		}
	}
	ya := newYAxis(top)
	h := chartTop + chartPlotH + chartBottom
	var c canvas
	c.open("balance", h)
	for _, w := range m.meta.Steady {
		x1, x2 := a.x(w.From), a.x(w.To)
		c.rect(x1, chartTop, x2-x1, chartPlotH, `class="steady"`)
	}
	shadeFaults(&c, a, m.faults, chartTop, chartTop+chartPlotH)
	a.ticks(&c, chartTop-2, chartTop+chartPlotH, 0, false)
	ya.draw(&c, a, "")
	step := max(len(samples)/int(plotWidth), 1)
	end := func(i int) time.Duration {
		if i+step < len(samples) {
			return samples[i+step].At
		}
		return m.dur
	}
	// Ideal band and line.
	var ideal strings.Builder
	for i := 0; i < len(samples); i += step {
		s := samples[i]
		x1, x2 := a.x(s.At), a.x(end(i))
		c.rect(x1, ya.y(s.Ideal+1), x2-x1, ya.y(max(s.Ideal-1, 0))-ya.y(s.Ideal+1), `class="ideal-band"`)
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&ideal, "%s%s %sH%s", cmd, num(x1), num(ya.y(s.Ideal)), num(x2))
	}
	// One step line per instance; a gap where the instance is absent from a sample. Lines are offset by
	// up to a few pixels, each instance by its own amount, so instances holding equal counts stay visible.
	n := len(m.insts)
	spread := min(6.0, 1.8*float64(n-1))
	for k, in := range m.insts {
		off := 0.0
		if n > 1 {
			off = spread * (float64(k)/float64(n-1) - 0.5)
		}
		var d strings.Builder
		pen := false
		for i := 0; i < len(samples); i += step {
			n, ok := samples[i].PerInst[in.id]
			if !ok {
				pen = false
				continue
			}
			x1, x2, py := a.x(samples[i].At), a.x(end(i)), ya.y(float64(n))+off
			if pen {
				fmt.Fprintf(&d, "V%sH%s", num(py), num(x2))
			} else {
				fmt.Fprintf(&d, "M%s %sH%s", num(x1), num(py), num(x2))
				pen = true
			}
		}
		if d.Len() > 0 {
			fmt.Fprintf(&c.b, `<path class="series" data-instance="%s" stroke="%s" d="%s"><title>%s</title></path>`,
				esc(in.id), instanceColor(k), d.String(), esc(in.id))
		}
	}
	fmt.Fprintf(&c.b, `<path class="ideal" d="%s"><title>ideal: endpoints / live instances</title></path>`, ideal.String())
	// Balance violations are marked where they are judged, above the plot.
	var bv []violInfo
	for _, v := range m.viols {
		if v.invariant == checker.InvBalance {
			bv = append(bv, v)
		}
	}
	markViolations(&c, m, a, bv, chartTop+8, 6, "vmark-balance", true)
	return c.close()
}

// opsWindow returns the window over which operation rates are averaged: the renewal period (a third of
// the lease TTL), so periodic renewals read as a steady rate rather than as spikes and gaps; a second
// when the TTL is unknown.
func opsWindow(meta history.Meta) time.Duration {
	if meta.LeaseTTL > 0 {
		return meta.LeaseTTL / 3
	}
	return time.Second
}

// renderOps draws backend operations per second as one small area chart per instance, all on the same
// scale, with amber ticks where operations failed or had an unknown outcome.
func renderOps(m *model) string {
	const nb = 150
	bw := max(m.dur/nb, time.Microsecond)
	counts := make([][]int, len(m.insts))
	errs := make([][]int, len(m.insts))
	for k := range counts {
		counts[k], errs[k] = make([]int, nb), make([]int, nb)
	}
	total := 0
	for i := range m.ev {
		e := &m.ev[i]
		if e.Op == nil || e.Instance == "" {
			continue
		}
		k, b := m.instIdx[e.Instance], min(int(e.At/bw), nb-1)
		counts[k][b]++
		total++
		if e.Op.Unknown || e.Op.Err != "" {
			errs[k][b]++
		}
	}
	if total == 0 {
		return ""
	}
	// Rates are averages under a triangular kernel whose half-width is the renewal period: operations
	// repeating with that period then read as a steady rate, whatever their phase.
	half := max(float64(opsWindow(m.meta))/float64(bw), 1)
	// Smoothing never crosses the start or end of a fault, so a change a fault causes is not drawn
	// before the fault began (nor its recovery before it ended).
	seg := make([]int, nb)
	for b := range seg {
		t0 := time.Duration(b) * bw
		for _, f := range m.faults {
			for _, edge := range []time.Duration{f.at, f.end} {
				if edge > 0 && edge < m.dur && edge <= t0 {
					seg[b]++ // buckets after the same edges share a segment
				}
			}
		}
	}
	rates := make([][]float64, len(counts))
	for k := range counts {
		rates[k] = smoothRate(counts[k], seg, half, bw)
	}
	top, peak, clipped := opsScale(rates)
	rowH := 30.0
	if len(m.insts) > 16 {
		rowH = 18
	}
	a := newTimeAxis(0, m.dur)
	h := chartTop + float64(len(m.insts))*rowH + 8
	var c canvas
	c.open("ops", h)
	shadeFaults(&c, a, m.faults, chartTop, h-8)
	a.ticks(&c, chartTop-2, h-8, 0, false)
	for k, rs := range rates {
		in := m.insts[k]
		y0 := chartTop + float64(k)*rowH
		base := y0 + rowH - 3
		var d strings.Builder
		fmt.Fprintf(&d, "M%s %s", num(a.x0), num(base))
		for b, r := range rs {
			py := base - (rowH-6)*min(r, top)/top
			fmt.Fprintf(&d, "L%s %sL%s %s", num(a.x(time.Duration(b)*bw)), num(py), num(a.x(time.Duration(b+1)*bw)), num(py))
		}
		fmt.Fprintf(&d, "L%s %sZ", num(a.x(m.dur)), num(base))
		fmt.Fprintf(&c.b, `<g class="ops-row" data-instance="%s"><title>%s</title>`, esc(in.id), esc(in.id))
		c.line(a.x0, base+0.5, a.x0+a.w, base+0.5, `class="sep"`)
		fmt.Fprintf(&c.b, `<path class="area" fill="%s" d="%s"/>`, in.color, d.String())
		c.rect(8, base-10, 10, 10, `fill="`+in.color+`"`)
		c.text(gutterLeft-6, base-2, `class="rowlabel" text-anchor="end"`, in.short)
		for b, n := range errs[k] {
			if n > 0 {
				x1 := a.x(time.Duration(b) * bw)
				fmt.Fprintf(&c.b, `<rect class="op-errors" x="%s" y="%s" width="%s" height="4"><title>%d failed or unknown operations at %s</title></rect>`,
					num(x1), num(base-1), num(max(a.x(time.Duration(b+1)*bw)-x1, 1.5)), n, fmtAt(time.Duration(b)*bw))
			}
		}
		c.raw("</g>")
	}
	note := fmt.Sprintf("row height = %s ops/s, smoothed over %s", trimZeros(fmt.Sprintf("%.1f", top)), fmtDur(opsWindow(m.meta)))
	if clipped {
		note += fmt.Sprintf("; peaks above it are cut (highest: %.0f ops/s)", peak)
	}
	c.text(8, 10, `class="tick"`, note)
	return c.close()
}

// balanceSummary describes the balance samples in steady windows: worst deviation from the ideal.
func balanceSummary(m *model) string {
	var worst float64
	n := 0
	for _, s := range m.rep.Balance {
		if !inSteady(m, s) {
			continue
		}
		n++
		for _, v := range s.PerInst {
			worst = max(worst, math.Abs(float64(v)-s.Ideal))
		}
	}
	if n == 0 {
		return fmt.Sprintf("%d samples; no steady window to judge balance in.", len(m.rep.Balance))
	}
	return fmt.Sprintf("%d samples in steady windows; largest deviation from the ideal share: %.1f endpoints.", n, worst)
}

func inSteady(m *model, s checker.BalanceSample) bool {
	for _, w := range m.meta.Steady {
		if w.Contains(s.At) {
			return true
		}
	}
	return false
}

// opsScale returns the rate a row's height stands for. Start-up bursts can be far above the steady
// rate; when the highest rate exceeds four times the 75th percentile (the typical steady rate), the scale
// is twice that percentile and the peaks are cut, so the steady state stays readable.
func opsScale(rates [][]float64) (top, peak float64, clipped bool) {
	var all []float64
	for _, rs := range rates {
		for _, r := range rs {
			peak = max(peak, r)
			if r > 0 {
				all = append(all, r)
			}
		}
	}
	if len(all) == 0 {
		return 1, 0, false
	}
	slices.Sort(all)
	p75 := all[(len(all)*75)/100]
	if peak > 4*p75 {
		return newYAxis(p75 * 2).max, peak, true
	}
	return newYAxis(peak).max, peak, false
}

// smoothRate turns counts per bucket of width bw into rates per second, averaged under a triangular
// kernel of the given half-width (in buckets) over the buckets of the same segment (seg, nil for one
// segment); near the ends of the run and of a segment the kernel is renormalised.
func smoothRate(counts, seg []int, half float64, bw time.Duration) []float64 {
	h := int(math.Ceil(half))
	out := make([]float64, len(counts))
	for i := range counts {
		var sum, weight float64
		for j := max(i-h, 0); j <= min(i+h, len(counts)-1); j++ {
			w := 1 - math.Abs(float64(j-i))/half
			if w <= 0 || (seg != nil && seg[j] != seg[i]) {
				continue
			}
			sum += w * float64(counts[j])
			weight += w
		}
		out[i] = sum / weight / bw.Seconds()
	}
	return out
}
