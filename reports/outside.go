package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// Faults declared outside the system's assumptions. Inside them the checker holds a system to every
// bound; what a fault outside them causes is excused — its findings are caught when nothing reached the
// resource, and the endpoints it kept from being polled are not held to the failover bound. A page that
// said only "every invariant held" would hide that, so each such fault gets a banner at the top: what
// was excused, for which endpoints, for how long, and what was measured.

// outsideFault is one fault outside the assumptions and what the run shows of it.
type outsideFault struct {
	f faultInfo
	// gaps are the endpoints left unpolled across the fault for longer than their usual pace, longest
	// first, with how long.
	gaps []epGap
	// caught and reached count the findings the checker attributed to the fault: caught (safe) and
	// still violations (a stale poll reached the resource).
	caught, reached int
}

// epGap is how long an endpoint went without a poll that reached the resource.
type epGap struct {
	ep  string
	gap time.Duration
}

// outsideFaults lists the run's faults whose class the history declares outside the assumptions, in
// order of their start.
func (m *model) outsideFaults() []outsideFault {
	var out []outsideFault
	for _, f := range m.faults {
		if !slices.Contains(m.meta.Assumptions.Outside, f.name) {
			continue
		}
		of := outsideFault{f: f, gaps: m.gapsAcross(f)}
		tag := f.id + " " + f.name
		for _, v := range m.caught {
			if slices.Contains(v.v.Outside, tag) {
				of.caught++
			}
		}
		for _, v := range m.viols {
			if slices.Contains(v.v.Outside, tag) {
				of.reached++
			}
		}
		out = append(out, of)
	}
	return out
}

// gapsAcross measures, for every endpoint, the longest gap between polls that reached the resource
// that overlaps the fault's reach: from its start to a lease TTL after its end (a holder may believe,
// and a guard hold grants back, that long after). A gap is counted from the end of a poll to the start
// of the next (or the end of the run). Gaps no longer than two poll intervals and a poll are the usual
// pace, not the fault's doing, and are left out, as are endpoints never polled before the fault.
func (m *model) gapsAcross(f faultInfo) []epGap {
	usual := 2 * m.meta.PollInterval
	if m.meta.Timing != nil { // histories from before timing was recorded lack it
		usual += m.meta.Timing.PollDuration
	}
	reach := f.end + m.meta.LeaseTTL
	var out []epGap
	for ep := range m.eps {
		var longest time.Duration
		lastEnd := time.Duration(-1)
		polledBefore := false
		for _, i := range m.epEvents[ep] {
			e := &m.ev[i]
			if e.Poll == nil || e.Poll.Outcome == history.PollRefused {
				continue
			}
			if lastEnd >= 0 && e.At > lastEnd && lastEnd <= reach && e.At >= f.at {
				longest = max(longest, e.At-lastEnd)
			}
			polledBefore = polledBefore || e.At <= f.at
			lastEnd = max(lastEnd, m.end(e))
		}
		if lastEnd >= 0 && lastEnd <= reach && m.dur > lastEnd {
			longest = max(longest, m.dur-lastEnd) // never polled again
		}
		if polledBefore && longest > usual {
			out = append(out, epGap{ep: m.eps[ep], gap: longest})
		}
	}
	slices.SortStableFunc(out, func(a, b epGap) int { return int(b.gap - a.gap) })
	return out
}

// outsideBanner says, for each fault outside the assumptions, what the run measured across it and how
// the checker judged that: which endpoints were held to a failover bound and which were not, and
// whether the findings it explains were caught or stay violations. Nil when there is no such fault.
func (m *model) outsideBanner() []string {
	var out []string
	for _, of := range m.outsideFaults() {
		f := of.f
		s := fmt.Sprintf("%s %s", f.id, f.name)
		if len(f.targets) > 0 {
			s += " of " + strings.Join(m.shortIDs(f.targets), ", ")
		}
		s += fmt.Sprintf(" (%s) is declared outside %s's assumptions.", m.windowText(f), orDash(m.meta.System))
		s += " " + m.gapText(of)
		switch {
		case of.caught > 0 && of.reached > 0:
			s += fmt.Sprintf(" Of the findings it explains, %s stopped before the resource (caught, safe) and %s reached it (violations all the same).",
				plural(of.caught, "finding", "findings"), plural(of.reached, "finding", "findings"))
		case of.caught > 0:
			s += fmt.Sprintf(" %s it explains stopped before the resource: caught (safe), listed apart.", capitalize(plural(of.caught, "finding", "findings")))
		case of.reached > 0:
			s += fmt.Sprintf(" %s it explains reached the resource: violations all the same.", capitalize(plural(of.reached, "finding", "findings")))
		default:
			s += " No finding of the checker is attributed to it."
		}
		out = append(out, s)
	}
	return out
}

// gapText says which endpoints went unpolled across an outside fault, for how long, and whether their
// takeovers were held to a bound (a takeover the checker measured after this fault) or not.
func (m *model) gapText(of outsideFault) string {
	word := m.epWord()
	if len(of.gaps) == 0 {
		return fmt.Sprintf("No %s went unpolled longer than its usual pace across it.", word)
	}
	judged := map[string]checker.Failover{}
	for _, fo := range m.rep.Failovers {
		if fo.FaultID == of.f.id {
			judged[fo.Endpoint] = fo
		}
	}
	var excused []string
	over := 0
	for _, g := range of.gaps {
		fo, ok := judged[g.ep]
		if !ok {
			excused = append(excused, g.ep)
		} else if fo.Latency < 0 || (fo.Bound > 0 && fo.Latency > fo.Bound) {
			over++
		}
	}
	slices.SortFunc(excused, func(a, b string) int {
		if naturalLess(a, b) {
			return -1
		}
		return 1
	})
	n := len(of.gaps)
	s := fmt.Sprintf("%s (%s) went unpolled for %s across it", capitalize(plural(n, word, word+"s")), listNames(gapNames(of.gaps), 6),
		m.lengthText(of.gaps[n-1].gap, of.gaps[0].gap))
	inside := fmt.Sprintf("inside the assumptions a takeover is due within %s", m.lengthText(0, m.meta.FailoverBound))
	switch {
	case len(excused) == n:
		return s + fmt.Sprintf(", and the checker held none of them to a failover bound; %s.", inside)
	case len(excused) == 0:
		return s + fmt.Sprintf("; the checker held their takeovers to the bound table all the same (%d over it).", over)
	}
	return s + fmt.Sprintf("; the checker held %d of them to the bound table (%d over it), not %s; %s.",
		n-len(excused), over, listNames(excused, 6), inside)
}

// gapNames are the endpoints of gs in natural order.
func gapNames(gs []epGap) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.ep
	}
	slices.SortFunc(out, func(a, b string) int {
		if naturalLess(a, b) {
			return -1
		}
		return 1
	})
	return out
}

// listNames joins names, naming at most n and counting the rest.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// windowText is a fault's window: "at 6.17s" for an instant, "6.11s–10.6s" otherwise.
func (m *model) windowText(f faultInfo) string {
	if fmtDur(f.end) == fmtDur(f.at) {
		return "at " + fmtDur(f.at)
	}
	return fmtDur(f.at) + "–" + fmtDur(f.end)
}

// lengthText writes a duration, or a range of them, in run time and, at a time scale other than 1, in
// spec time too: "4.39s–4.73s (43.9s–47.3s of spec time)".
func (m *model) lengthText(lo, hi time.Duration) string {
	rng := func(lo, hi time.Duration) string {
		if lo > 0 && fmtDur(lo) != fmtDur(hi) {
			return fmtDur(lo) + "–" + fmtDur(hi)
		}
		return fmtDur(hi)
	}
	ts := m.meta.TimeScale
	if ts <= 0 || ts == 1 {
		return rng(lo, hi)
	}
	spec := func(d time.Duration) time.Duration { return time.Duration(float64(d) / ts) }
	return rng(lo, hi) + " (" + rng(spec(lo), spec(hi)) + " of spec time)"
}
