package simcli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

// summaryRow is one line of the end-of-run table.
type summaryRow struct {
	scenario string
	passed   bool
	errored  bool // the scenario could not be set up: no history, no verdict
	// interrupted: the run was stopped (Ctrl-C) before its end; its partial history was checked and
	// saved, but it has no verdict.
	interrupted bool
	notRun      bool // the run was interrupted before this scenario started
	// inconclusive: it did not pass only because timing findings coincided with the harness's own lag
	// (reports.Inconclusive): neither passed nor failed.
	inconclusive bool
	outcomes     map[string]checker.Outcome
	detail       string
	refused      int // polls refused by fencing: never violations of single-poller
	failover     string
	duration     time.Duration
	// judged is when the checker's verdict was known (before the reports were written).
	judged time.Time
}

var invariantOrder = []string{checker.InvSingleHolder, checker.InvSinglePoller, checker.InvStalePoll, checker.InvValidity,
	checker.InvLinearizable, checker.InvFailover, checker.InvBalance, checker.InvFencing, checker.InvLiveness, checker.InvBlindWrite}

func newSummaryRow(m history.Meta, rep checker.Report, passed bool) summaryRow {
	row := summaryRow{scenario: m.Scenario, passed: passed, outcomes: map[string]checker.Outcome{}, duration: m.Duration,
		inconclusive: !passed && reports.Inconclusive(rep, reports.ExpectOf(m))}
	var bad, caught []string
	for _, r := range rep.Results {
		row.outcomes[r.Invariant] = r.Outcome
		switch r.Outcome {
		case checker.Violated, checker.Unknown, checker.Inconclusive:
			bad = append(bad, fmt.Sprintf("%s %s: %s", r.Invariant, r.Outcome, r.Message))
		case checker.Caught:
			caught = append(caught, fmt.Sprintf("%s caught (safe): %s", r.Invariant, r.Message))
		}
	}
	switch {
	case len(bad) > 0:
		row.detail = strings.Join(append(bad, caught...), "; ")
	case len(caught) > 0:
		row.detail = "all invariants hold; " + strings.Join(caught, "; ")
	default:
		row.detail = "all invariants hold"
	}
	row.refused = rep.Refused
	row.failover = failoverFigures(rep.Failovers)
	return row
}

// failoverFigures summarises measured takeovers as "p50 1.2s / max 3.4s (bound 4.5s)": the bound is the
// longest any takeover was held to (each has its own, from the model).
func failoverFigures(fs []checker.Failover) string {
	var lat []time.Duration
	var bound time.Duration
	for _, f := range fs {
		if f.Latency >= 0 {
			lat = append(lat, f.Latency)
		}
		bound = max(bound, f.Bound)
	}
	if len(lat) == 0 {
		return "-"
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50 := lat[len(lat)/2]
	return fmt.Sprintf("p50 %s / max %s (bound %s)", p50.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), bound.Round(time.Millisecond))
}

func verdictWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// rowWord is a finished run's verdict: PASS, FAIL, or INCONCLUSIVE (the harness ran too late to judge).
func rowWord(r summaryRow) string {
	if r.inconclusive {
		return "INCONCLUSIVE"
	}
	return verdictWord(r.passed)
}

func mark(o checker.Outcome) string {
	switch o {
	case checker.Pass:
		return "ok"
	case checker.Violated:
		return "VIOLATED"
	case checker.Unknown:
		return "unknown"
	case checker.Skipped:
		return "-"
	case checker.Caught:
		return "caught"
	case checker.Inconclusive:
		return "INCONCLUSIVE"
	}
	return "?"
}

// printPassRates prints, for each scenario run several times (--repeat), how many of its runs passed.
func printPassRates(w io.Writer, rows []summaryRow) {
	type rate struct{ runs, passed, failed, inconclusive, other int }
	var order []string
	rates := map[string]*rate{}
	for _, r := range rows {
		x := rates[r.scenario]
		if x == nil {
			x = &rate{}
			rates[r.scenario] = x
			order = append(order, r.scenario)
		}
		x.runs++
		switch {
		case r.notRun || r.interrupted || r.errored:
			x.other++
		case r.passed:
			x.passed++
		case r.inconclusive:
			x.inconclusive++
		default:
			x.failed++
		}
	}
	fmt.Fprintln(w, "\npass rate (each scenario on its one seed):")
	for _, sc := range order {
		x := rates[sc]
		fmt.Fprintf(w, "  %s: %d of %d passed (%.0f%%)", sc, x.passed, x.runs, 100*float64(x.passed)/float64(x.runs))
		var rest []string
		if x.failed > 0 {
			rest = append(rest, fmt.Sprintf("%d failed", x.failed))
		}
		if x.inconclusive > 0 {
			rest = append(rest, fmt.Sprintf("%d inconclusive", x.inconclusive))
		}
		if x.other > 0 {
			rest = append(rest, fmt.Sprintf("%d without a verdict", x.other))
		}
		if len(rest) > 0 {
			fmt.Fprintf(w, "; %s", strings.Join(rest, ", "))
		}
		fmt.Fprintln(w)
	}
}

func printSummary(w io.Writer, rows []summaryRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\nscenario\tverdict")
	for _, inv := range invariantOrder {
		fmt.Fprintf(tw, "\t%s", inv)
	}
	fmt.Fprint(tw, "\trefused\ttakeover p50 / max (bound)\n") // "failover" is already the invariant's column
	var pass, fail, errored, interrupted, notRun, inconclusive int
	for _, r := range rows {
		word := rowWord(r)
		switch {
		case r.notRun:
			word = "not run"
			notRun++
		case r.interrupted:
			word = "INTERRUPTED"
			interrupted++
		case r.errored:
			word = "ERROR"
			errored++
		case r.passed:
			pass++
		case r.inconclusive:
			inconclusive++
		default:
			fail++
		}
		fmt.Fprintf(tw, "%s\t%s", r.scenario, word)
		for _, inv := range invariantOrder {
			if r.errored || r.notRun || r.interrupted {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%s", mark(r.outcomes[inv]))
		}
		fmt.Fprintf(tw, "\t%d\t%s\n", r.refused, r.failover)
	}
	_ = tw.Flush()
	tally := fmt.Sprintf("%d passed, %d failed", pass, fail)
	for _, c := range []struct {
		n    int
		what string
	}{{inconclusive, "inconclusive (the harness ran too late to judge)"}, {errored, "could not be set up"}, {interrupted, "interrupted"}, {notRun, "not run"}} {
		if c.n > 0 {
			tally += fmt.Sprintf(", %d %s", c.n, c.what)
		}
	}
	fmt.Fprintf(w, "\n%s\n", tally)
}

func list(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tFLEET\tREDIS\tDESCRIPTION")
	for _, sc := range scenarios.All() {
		fmt.Fprintf(tw, "%s\t%d×%d\t%s\t%s\n", sc.Name, sc.Instances, sc.Endpoints, topologyWord(sc.Topology), sc.Description)
	}
	fmt.Fprintln(tw, "\nSUITE\tSCALE\tRUN TIME\tDESCRIPTION")
	for _, su := range scenarios.Suites() {
		rt := su.RunTime().Round(time.Second).String() + " one at a time"
		if su.Name == "soak" {
			rt = "--duration"
		}
		fmt.Fprintf(tw, "%s\t%g\t%s\t%s\n", su.Name, su.TimeScale, rt, su.Description)
	}
	fmt.Fprintln(tw, "\nSYSTEM\tKIND\tDESCRIPTION")
	for _, n := range sim.Systems() {
		s, err := sim.Lookup(n)
		if err != nil {
			return err
		}
		desc := "-"
		if d, ok := s.(sim.Describer); ok {
			desc = d.Description()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, systemKind(s), desc)
	}
	listExamples(tw)
	return tw.Flush()
}

// systemKind names what a system is for simrun list: a lease manager or an election, and for an
// election on PostgreSQL, that.
func systemKind(s sim.System) string {
	if usesPostgres(s) {
		return kindOf(s) + " (PostgreSQL)"
	}
	return kindOf(s)
}

// topologyWord names the Redis deployment a scenario needs, for simrun list.
func topologyWord(t string) string {
	if t == sim.TopologySingle {
		return "any"
	}
	return t
}
