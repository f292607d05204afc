package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
)

// foGroup is the failovers measured after one fault.
type foGroup struct {
	faultID, fault string
	targets        []string
	at             time.Duration
	items          []checker.Failover
	polled, never  int
	over           int
	p50, p99, max  time.Duration
	bound          time.Duration
}

// buildFailoverGroups groups failovers by fault, in order of the fault's time.
func (m *model) buildFailoverGroups() {
	idx := map[string]int{}
	for _, f := range m.rep.Failovers {
		g, ok := idx[f.FaultID]
		if !ok {
			g = len(m.groups)
			idx[f.FaultID] = g
			m.groups = append(m.groups, foGroup{faultID: f.FaultID, fault: f.Fault, at: f.FaultAt})
			for _, fi := range m.faults {
				if fi.id == f.FaultID {
					m.groups[g].targets = fi.targets
				}
			}
		}
		m.groups[g].items = append(m.groups[g].items, f)
	}
	for gi := range m.groups {
		g := &m.groups[gi]
		var lat []time.Duration
		for _, f := range g.items {
			g.bound = max(g.bound, f.Bound)
			if f.Latency < 0 {
				g.never++
				continue
			}
			g.polled++
			lat = append(lat, f.Latency)
			if f.Bound > 0 && f.Latency > f.Bound {
				g.over++
			}
		}
		if g.bound == 0 {
			g.bound = m.meta.FailoverBound
		}
		slices.Sort(lat)
		g.p50, g.p99 = percentile(lat, 50), percentile(lat, 99)
		if len(lat) > 0 {
			g.max = lat[len(lat)-1]
		}
	}
	sort.SliceStable(m.groups, func(i, j int) bool { return m.groups[i].at < m.groups[j].at })
}

// percentile returns the nearest-rank p-th percentile of sorted values, -1 when there are none.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return -1
	}
	k := (p*len(sorted) + 99) / 100
	return sorted[max(k, 1)-1]
}

// allFailoverLatencies returns every measured latency, sorted.
func (m *model) allFailoverLatencies() []time.Duration {
	var lat []time.Duration
	for _, f := range m.rep.Failovers {
		if f.Latency >= 0 {
			lat = append(lat, f.Latency)
		}
	}
	slices.Sort(lat)
	return lat
}

// failoverRows builds the per-fault table, the full list and a one-line headline.
func failoverRows(m *model) ([]groupRow, []foRow, string) {
	var groups []groupRow
	for _, g := range m.groups {
		class := "pass"
		if g.over > 0 || g.never > 0 {
			class = "violated"
		}
		groups = append(groups, groupRow{
			FaultID: g.faultID, Fault: g.fault, Targets: targetsText(g.targets), At: fmtAt(g.at),
			Affected: len(g.items), Polled: g.polled, Over: g.over, Never: g.never,
			P50: fmtDur(g.p50), P99: fmtDur(g.p99), Max: fmtDur(g.max), Bound: fmtDur(g.bound), Class: class,
		})
	}
	var rows []foRow
	for _, f := range m.rep.Failovers {
		class := "pass"
		if f.Latency < 0 || (f.Bound > 0 && f.Latency > f.Bound) {
			class = "violated"
		}
		rows = append(rows, foRow{
			FaultID: f.FaultID, Fault: f.Fault, Endpoint: f.Endpoint, From: f.From, To: orDash(f.To),
			FaultAt: fmtAt(f.FaultAt), PolledAt: polledAt(f.Latency, f.PolledAt), Latency: fmtDur(f.Latency),
			Bound: fmtDur(f.Bound), Class: class,
		})
	}
	return groups, rows, failoverHeadline(m)
}

func polledAt(lat, at time.Duration) string {
	if lat < 0 {
		return "never"
	}
	return fmtAt(at)
}

// failoverHeadline summarises every takeover in one sentence.
func failoverHeadline(m *model) string {
	if len(m.rep.Failovers) == 0 {
		return ""
	}
	lat := m.allFailoverLatencies()
	never := len(m.rep.Failovers) - len(lat)
	s := fmt.Sprintf("%s after %s", plural(len(m.rep.Failovers), "takeover", "takeovers"), plural(len(m.groups), "fault", "faults"))
	if len(lat) > 0 {
		s += fmt.Sprintf(": p50 %s, p99 %s, max %s", fmtDur(percentile(lat, 50)), fmtDur(percentile(lat, 99)), fmtDur(lat[len(lat)-1]))
	}
	if b := boundsText(m.rep.Failovers, m.meta.FailoverBound); b != "" {
		s += " (" + b + ")"
	}
	if never > 0 {
		s += "; " + plural(never, "endpoint", "endpoints") + " never polled again"
	}
	return s + "."
}

// boundsText names the bound the takeovers were held to: "bound 3.1s" when they share one, else the
// longest per fault ("bounds: crash 3.1s, stop 201ms"); def for takeovers that carry none.
func boundsText(fos []checker.Failover, def time.Duration) string {
	longest := map[string]time.Duration{}
	var order []string
	for _, f := range fos {
		b := f.Bound
		if b <= 0 {
			b = def
		}
		if _, ok := longest[f.Fault]; !ok {
			order = append(order, f.Fault)
		}
		longest[f.Fault] = max(longest[f.Fault], b)
	}
	switch {
	case len(order) == 0:
		return ""
	case len(order) == 1:
		return "bound " + fmtDur(longest[order[0]])
	}
	parts := make([]string, len(order))
	for i, f := range order {
		parts[i] = f + " " + fmtDur(longest[f])
	}
	return "bounds: " + strings.Join(parts, ", ")
}
