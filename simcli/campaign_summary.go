package simcli

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// campaignView is what a summary shows: the records of one shard, or of every shard of a merge.
type campaignView struct {
	def    campaignDef
	shard  int           // the shard shown, 0 for all of them
	shards []mergedShard // the shards shown, with their wall times
	// records are in job order; their Dir is relative to the summary's directory.
	records     []jobRecord
	interrupted bool
}

// wall is the campaign's wall time: the longest of its shards, which run side by side.
func (v campaignView) wall() time.Duration {
	var w time.Duration
	for _, s := range v.shards {
		w = max(w, s.Wall)
	}
	return w
}

// count tallies the records by outcome.
func (v campaignView) count() map[outcome]int {
	n := map[outcome]int{}
	for _, r := range v.records {
		n[r.Outcome]++
	}
	return n
}

// columns are the outcomes a table shows: pass and fail always, the others when some run had them.
func (v campaignView) columns() []outcome {
	n := v.count()
	var cols []outcome
	for _, o := range outcomeOrder {
		if o == outPass || o == outFail || n[o] > 0 {
			cols = append(cols, o)
		}
	}
	return cols
}

// scenarioTally is one scenario's runs.
type scenarioTally struct {
	scenario string
	runs     int
	counts   map[outcome]int
	bad      []int64 // seeds of the runs that failed, were inconclusive or could not be set up
}

// byScenario tallies the records per scenario, in the campaign's scenario order.
func (v campaignView) byScenario() []scenarioTally {
	at := map[string]*scenarioTally{}
	for _, r := range v.records {
		t := at[r.Scenario]
		if t == nil {
			t = &scenarioTally{scenario: r.Scenario, counts: map[outcome]int{}}
			at[r.Scenario] = t
		}
		t.runs++
		t.counts[r.Outcome]++
		if r.Outcome.bad() {
			t.bad = append(t.bad, r.Seed)
		}
	}
	var out []scenarioTally
	for _, sc := range v.def.Scenarios {
		if t := at[sc]; t != nil {
			out = append(out, *t)
		}
	}
	return out
}

// causeTally is the runs that share one cause.
type causeTally struct {
	cause string
	runs  []jobRecord
}

// byCause groups the runs that did not pass by cause; a run with several causes counts under each.
// The most frequent cause comes first.
func (v campaignView) byCause() []causeTally {
	at := map[string]*causeTally{}
	var order []string
	for _, r := range v.records {
		if !r.Outcome.bad() {
			continue
		}
		causes := r.Causes
		switch {
		case r.Outcome == outError:
			causes = []string{"could not be set up"}
		case len(causes) == 0:
			causes = []string{string(r.Outcome)}
		}
		for _, c := range causes {
			if at[c] == nil {
				at[c] = &causeTally{cause: c}
				order = append(order, c)
			}
			at[c].runs = append(at[c].runs, r)
		}
	}
	out := make([]causeTally, 0, len(order))
	for _, c := range order {
		out = append(out, *at[c])
	}
	slices.SortStableFunc(out, func(a, b causeTally) int {
		if len(a.runs) != len(b.runs) {
			return len(b.runs) - len(a.runs)
		}
		return strings.Compare(a.cause, b.cause)
	})
	return out
}

// seedsByScenario lists runs as "crash-failover: 12, 34; gc-pause: 56".
func seedsByScenario(runs []jobRecord) string {
	var scenarios []string
	seeds := map[string][]string{}
	for _, r := range runs {
		if seeds[r.Scenario] == nil {
			scenarios = append(scenarios, r.Scenario)
		}
		seeds[r.Scenario] = append(seeds[r.Scenario], strconv.FormatInt(r.Seed, 10))
	}
	parts := make([]string, len(scenarios))
	for i, sc := range scenarios {
		parts[i] = sc + ": " + strings.Join(seeds[sc], ", ")
	}
	return strings.Join(parts, "; ")
}

// tally is the one-line count: "9 runs: 8 passed, 1 failed".
func (v campaignView) tally() string {
	n := v.count()
	var parts []string
	for _, o := range v.columns() {
		parts = append(parts, fmt.Sprintf("%d %s", n[o], o.word()))
	}
	return fmt.Sprintf("%s: %s", plural(len(v.records), "run"), strings.Join(parts, ", "))
}

// title names what the summary covers.
func (v campaignView) title() string {
	t := "campaign " + v.def.ID
	if v.shard > 0 && v.def.Shards > 1 {
		t += fmt.Sprintf(", shard %d/%d", v.shard, v.def.Shards)
	}
	return t
}

// about describes the campaign in one line: systems, scenarios, seeds, scale, backend.
func (v campaignView) about() string {
	var systems, backends []string
	for _, j := range v.def.Jobs {
		if !slices.Contains(systems, j.System) {
			systems = append(systems, j.System)
		}
		if !slices.Contains(backends, j.Backend) {
			backends = append(backends, j.Backend)
		}
	}
	what := plural(len(v.def.Scenarios), "scenario")
	if v.def.Suite != "" {
		what += " of suite " + v.def.Suite
	}
	return fmt.Sprintf("%s × %s = %s of %s; %s (%s); time scale %g; redis %s",
		what, plural(len(v.def.Seeds), "seed"), plural(len(v.def.Jobs), "run"), strings.Join(systems, ", "), v.def.seedSource(), seedsText(v.def.Seeds),
		v.def.TimeScale, strings.Join(backends, ", "))
}

// timing gives the wall time, per shard for a merge.
func (v campaignView) timing() string {
	if len(v.shards) <= 1 {
		return "wall time " + v.wall().Round(time.Second).String()
	}
	var parts []string
	for _, s := range v.shards {
		parts = append(parts, fmt.Sprintf("shard %d %s", s.Shard, s.Wall.Round(time.Second)))
	}
	return fmt.Sprintf("wall time %s, the longest shard's (%s)", v.wall().Round(time.Second), strings.Join(parts, ", "))
}

// printText writes the summary for a terminal; base is the directory the records' Dir are relative to,
// as the user named it.
func (v campaignView) printText(w io.Writer, base string) {
	cols := v.columns()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\nscenario\truns")
	for _, o := range cols {
		fmt.Fprintf(tw, "\t%s", o.word())
	}
	fmt.Fprint(tw, "\tseeds that did not pass\n")
	for _, t := range v.byScenario() {
		fmt.Fprintf(tw, "%s\t%d", t.scenario, t.runs)
		for _, o := range cols {
			fmt.Fprintf(tw, "\t%d", t.counts[o])
		}
		fmt.Fprintf(tw, "\t%s\n", joinSeeds(t.bad))
	}
	_ = tw.Flush()
	if causes := v.byCause(); len(causes) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "\ncause\truns\tscenario: seeds\n")
		for _, c := range causes {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", c.cause, len(c.runs), seedsByScenario(c.runs))
		}
		_ = tw.Flush()
		fmt.Fprintln(w, "\nruns that did not pass:")
		for _, r := range v.records {
			if !r.Outcome.bad() {
				continue
			}
			fmt.Fprintf(w, "%s seed %d: %s\n", r.Scenario, r.Seed, r.why())
			if r.Kept {
				fmt.Fprintf(w, "  report: %s\n", filepath.Join(base, r.Dir, "report.html"))
			}
			fmt.Fprintf(w, "  replay: %s\n", r.Replay)
		}
	}
	fmt.Fprintf(w, "\n%s: %s; %s\n", v.title(), v.tally(), v.timing())
	if v.interrupted {
		fmt.Fprintf(w, "INTERRUPTED: %s did not run; the summary covers what did\n", plural(v.count()[outNotRun], "run"))
	}
}

// why is a run's causes, or its error, on one line.
func (r jobRecord) why() string {
	switch {
	case r.Outcome == outError:
		return "could not be set up: " + r.Error
	case len(r.Causes) > 0:
		return strings.Join(r.Causes, ", ")
	}
	return string(r.Outcome)
}

func joinSeeds(seeds []int64) string {
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ", ")
}

// markdown writes summary.md; links are relative to the directory it is written in.
func (v campaignView) markdown(w io.Writer) error {
	var b strings.Builder
	n := v.count()
	// The headline's symbol says what the exit status says: an inconclusive run is neither a pass nor a
	// failure, and a campaign whose runs all passed but for inconclusive ones is inconclusive.
	icon := "❌"
	switch code, _ := campaignExit(v); {
	case v.interrupted:
		icon = "⏹️"
	case code == ExitOK:
		icon = "✅"
	case code == ExitInconclusive:
		icon = "⏳"
	}
	fmt.Fprintf(&b, "### %s %s: %s\n\n", icon, v.title(), v.tally())
	if v.interrupted {
		fmt.Fprintf(&b, "**Interrupted**: %s did not run; this summary covers those that did.\n\n", plural(n[outNotRun], "run"))
	}
	fmt.Fprintf(&b, "%s. %s. Run it again: `%s`\n\n", v.about(), strings.ToUpper(v.timing()[:1])+v.timing()[1:], v.def.again(v.shard))
	cols := v.columns()
	b.WriteString("| scenario | runs |")
	for _, o := range cols {
		fmt.Fprintf(&b, " %s |", o.word())
	}
	b.WriteString(" seeds that did not pass |\n|---|---:|" + strings.Repeat("---:|", len(cols)) + "---|\n")
	for _, t := range v.byScenario() {
		fmt.Fprintf(&b, "| %s | %d |", t.scenario, t.runs)
		for _, o := range cols {
			fmt.Fprintf(&b, " %d |", t.counts[o])
		}
		fmt.Fprintf(&b, " %s |\n", joinSeeds(t.bad))
	}
	if causes := v.byCause(); len(causes) > 0 {
		b.WriteString("\n| cause | runs | scenario: seeds |\n|---|---:|---|\n")
		for _, c := range causes {
			fmt.Fprintf(&b, "| %s | %d | %s |\n", mdEscape(c.cause), len(c.runs), seedsByScenario(c.runs))
		}
		b.WriteString("\nRuns that did not pass:\n\n")
		for _, r := range v.records {
			if !r.Outcome.bad() {
				continue
			}
			fmt.Fprintf(&b, "- %s seed %d: %s", r.Scenario, r.Seed, mdEscape(r.why()))
			if r.Kept {
				fmt.Fprintf(&b, " ([report](%s))", filepath.ToSlash(filepath.Join(r.Dir, "report.html")))
			}
			fmt.Fprintf(&b, "\n  `%s`\n", r.Replay)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural counts things: "1 seed", "3 seeds".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// mdEscape keeps a phrase from breaking a Markdown table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
