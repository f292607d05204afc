package reports

import (
	"fmt"
	"io"
	"strings"
)

// Markdown limits, to fit a pull-request comment.
const (
	mdMaxFaultRows  = 10
	mdMaxViolations = 5
)

// mdCell makes text safe inside a Markdown table cell.
func mdCell(s string, n int) string {
	s = oneLine(s, n)
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "`", "'")
}

// renderRunMarkdown writes summary.md: the verdict, a table of invariants, the key failover figures,
// the first violations and the replay command.
func renderRunMarkdown(w io.Writer, m *model) error {
	var b strings.Builder
	mt := m.meta
	v := m.verdict()
	fmt.Fprintf(&b, "### %s %s: %s\n\n", verdictIcon(v.Class), mdCell(mt.Scenario, 80), v.Word)
	fmt.Fprintf(&b, "%s\n\n", mdCell(subline(m), 300))
	if mt.Interrupted {
		fmt.Fprintf(&b, "> **Interrupted:** %s\n\n", mdCell(interruptedHeadline(m), 600))
	} else if m.inconclusive {
		fmt.Fprintf(&b, "> **Inconclusive:** %s\n\n", mdCell(inconclusiveHeadline(m), 600))
	}
	if len(m.diag) > 0 && !m.passed {
		b.WriteString("**Diagnosis:**\n\n")
		for _, g := range m.diag {
			fmt.Fprintf(&b, "- **%s** (%s): %s\n", mdCell(g.title, 60), plural(len(g.viols)+g.extra, "violation", "violations"), mdCell(g.text, 1200))
		}
		b.WriteString("\n")
	}
	for _, s := range m.outsideBanner() {
		fmt.Fprintf(&b, "> **Outside the assumptions:** %s\n\n", mdCell(s, 900))
	}
	for _, s := range m.unplaced {
		fmt.Fprintf(&b, "> **A key the recorder could not place:** %s\n\n", mdCell(s, 900))
	}
	b.WriteString("| invariant | verdict | violations | caught (safe) | reason |\n|---|---|---:|---:|---|\n")
	for _, r := range m.results {
		fmt.Fprintf(&b, "| %s | %s %s | %d | %d | %s |\n", r.res.Invariant, r.st.icon(), r.st.label(),
			len(r.res.Violations)+r.res.Truncated, r.res.CaughtCount(), mdCell(m.humanize(r.res.Message), 160))
	}
	b.WriteString("\n")
	if m.rep.Refused > 0 {
		fmt.Fprintf(&b, "%s refused by fencing (judged by stale-poll; never counted as single-poller violations).\n\n", plural(m.rep.Refused, "poll was", "polls were"))
	}
	if h := failoverHeadline(m); h != "" {
		fmt.Fprintf(&b, "**Failover:** %s\n\n", h)
		b.WriteString("| fault | targets | endpoints | p50 | p99 | max | bound | over bound |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
		for i, g := range m.groups {
			if i == mdMaxFaultRows {
				fmt.Fprintf(&b, "| … %d more faults | | | | | | | |\n", len(m.groups)-i)
				break
			}
			fmt.Fprintf(&b, "| %s %s | %s | %d | %s | %s | %s | %s | %d |\n", mdCell(g.faultID, 20), mdCell(g.fault, 30),
				mdCell(targetsText(g.targets), 60), len(g.items), fmtDur(g.p50), fmtDur(g.p99), fmtDur(g.max), fmtDur(g.bound), g.over+g.never)
		}
		b.WriteString("\n")
	}
	if len(m.viols) > 0 {
		b.WriteString("**Violations:**\n\n")
		for i, v := range m.viols {
			if i == mdMaxViolations {
				fmt.Fprintf(&b, "- … %d more in report.html\n", len(m.viols)-i)
				break
			}
			fmt.Fprintf(&b, "- %s\n", mdCell(m.humanize(violTip(v)), 240))
		}
		if t := m.truncated(); t > 0 {
			fmt.Fprintf(&b, "- (%d more counted, not listed)\n", t)
		}
		b.WriteString("\n")
	}
	if len(m.inconc) > 0 {
		fmt.Fprintf(&b, "**Inconclusive (%d):** timing findings the harness's own lag can account for; not violations, not a pass.\n\n", len(m.inconc))
		for i, v := range m.inconc {
			if i == mdMaxViolations {
				fmt.Fprintf(&b, "- … %d more in report.html\n", len(m.inconc)-i)
				break
			}
			fmt.Fprintf(&b, "- %s\n", mdCell(m.humanize(inconclusiveTip(v)), 300))
		}
		b.WriteString("\n")
	}
	if mt.Lag != nil {
		fmt.Fprintf(&b, "**Harness lag:** %s.\n\n", mdCell(lagSummaryText(mt.Lag), 400))
	}
	if len(m.caught) > 0 {
		fmt.Fprintf(&b, "**Caught (safe, %d):** outside the system's assumptions and stopped before the resource; not violations.\n\n", m.caughtCount())
		for i, v := range m.caught {
			if i == mdMaxViolations {
				fmt.Fprintf(&b, "- … %d more in report.html\n", m.caughtCount()-i)
				break
			}
			fmt.Fprintf(&b, "- %s\n", mdCell(violTip(v), 240))
		}
		b.WriteString("\n")
	}
	if mt.Command != "" {
		fmt.Fprintf(&b, "Replay:\n\n```sh\n%s\n```\n\n", mt.Command)
	}
	b.WriteString("Full report: `report.html`; verdict for machines: `result.json`; history: `history.jsonl`.\n")
	_, err := io.WriteString(w, b.String())
	return err
}
