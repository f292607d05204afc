package simcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

const matrixUsage = `simrun matrix [flags]: every system × every scenario of its kind, on fixed seeds.

Lease systems run the lease scenarios; election systems run the election scenarios of their backend
(Redis or PostgreSQL). Rows are systems, columns scenarios; a cell is "pass" or the invariants violated
(two-holders, double-poll, stale-refused, outside-lease, non-linearizable, failover>bound, imbalance,
token-regress, stuck; a trailing "?" marks an undecided one, a trailing "~" an inconclusive one: the
harness itself ran too late to judge it). With --seeds N each cell is run on seeds
--seed .. --seed+N-1 and shows how many of them failed (k/N). Every failing run keeps its reports under
--out and is listed with its replay command.

Each cell is a pass, an expected failure (a baseline or peer failing: what it is there to show; its
characteristic cell, where its known flaw shows, is starred), unexpected (a reference system —
reference, election-redis, election-postgres — failing, or a baseline passing its characteristic cell:
the harness missed the flaw) or inconclusive (no run failed and one could not be judged: the harness
ran too late; never counted as a pass nor as an expected failure). index.html draws the grid,
summary.md and matrix.md hold it in Markdown, and the badge there agrees with the exit status.

Exit status: 0 every cell came out as expected, 1 a cell is unexpected, 2 usage or setup error, 3 none
unexpected, but a reference system's cell or a baseline's characteristic cell was inconclusive (a
baseline's other cells may pass or fail alike: one inconclusive is shown as such and leaves the exit
status as the other cells make it).

Flags:
`

// cellWords maps the checker's invariant names to the matrix's cell words.
var cellWords = map[string]string{
	checker.InvSingleHolder: "two-holders",
	checker.InvSinglePoller: "double-poll",
	checker.InvStalePoll:    "stale-refused",
	checker.InvValidity:     "outside-lease",
	checker.InvLinearizable: "non-linearizable",
	checker.InvFailover:     "failover>bound",
	checker.InvBalance:      "imbalance",
	checker.InvFencing:      "token-regress",
	checker.InvLiveness:     "stuck",
	checker.InvBlindWrite:   "blind-write",
	checker.InvAssumptions:  "assumptions",
}

// referenceSystems are Tenure's own systems: a failing cell of theirs is a failure of the matrix. A
// write the backend lost under a fault declared outside the assumptions is no failure of theirs: the
// checker judges it caught when the lost-write diagnosis explains it and the fault was under way.
var referenceSystems = map[string]bool{"reference": true, "election-redis": true, "election-postgres": true}

type matrixFlags struct {
	run       runFlags
	systems   string
	scenarios string
	seeds     int
	markdown  bool
	suite     string
	cellsOf   string
	// refused lists the cells (system / scenario) virtual time cannot hold, left blank, under why.
	refused map[string][]string
	// cells, when set (by tests), keeps only these system/scenario pairs.
	cells map[[2]string]bool
}

// matrixCell is one system × scenario over every seed.
type matrixCell struct {
	system, scenario string
	// order places the scenario's column: its place in --scenarios (or in the scenarios' own order).
	order int
	runs  []matrixRun
}

// fileMatrix is the matrix's table in Markdown, next to its index.
const fileMatrix = "matrix.md"

type matrixRun struct {
	seed    int64
	dir     string // relative to the matrix's output directory
	replay  string
	passed  bool
	errored bool
	// inconclusive: it did not pass only because the harness ran too late to judge a timing verdict.
	inconclusive bool
	words        []string
}

func matrixCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		switch args[0] {
		case "compare":
			return compareCmd(args[1:], stdout, stderr)
		case "verdicts":
			return verdictsCmd(args[1:], stdout)
		}
	}
	var f matrixFlags
	fs := flag.NewFlagSet("simrun matrix", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line; --help goes to stdout
	fs.Usage = func() {}
	f.run.registerMatrix(fs)
	fs.StringVar(&f.systems, "systems", "", "comma-separated systems (default: every listed system)")
	fs.StringVar(&f.scenarios, "scenarios", "", "comma-separated scenarios (default: every scenario)")
	fs.Func("seeds", "run each cell on this many seeds, from --seed on (default 1)", positiveInt(&f.seeds))
	fs.BoolVar(&f.markdown, "markdown", false, "print the table as Markdown")
	fs.StringVar(&f.suite, "suite", "", "the scenarios of a suite ("+suiteNames()+"), instead of --scenarios")
	fs.StringVar(&f.cellsOf, "cells-of", "", "only the cells another matrix ran: its directory or verdicts file (to run in real time the cells a virtual matrix held, and compare them)")
	fs.StringVar(&f.run.out, "out", "", "output directory (default ./simrun-out/<time>-matrix-<seed>): new, empty, or a matrix simrun wrote whose runs are not these")
	fs.IntVar(&f.run.parallel, "parallel", matrixParallel, "runs at once, each with its own Redis and proxies")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, matrixUsage)
			printFlags(stdout, fs)
			return ExitOK, err
		}
		return ExitUsage, flagError("matrix", fs, err)
	}
	f.run.visit(fs)
	if fs.NArg() > 0 && (fs.Arg(0) == "compare" || fs.Arg(0) == "verdicts") {
		return ExitUsage, fmt.Errorf("%w: %s is a command of its own and takes no flags before it: simrun matrix %s ...", errUsage, fs.Arg(0), fs.Arg(0))
	}
	if f.cellsOf != "" {
		runs, err := loadVerdicts(f.cellsOf)
		if err != nil {
			return ExitUsage, fmt.Errorf("--cells-of: %w", err)
		}
		f.cells = map[[2]string]bool{}
		for _, r := range runs {
			f.cells[[2]string{r.system, r.scenario}] = true
		}
	}
	if fs.NArg() > 0 {
		return ExitUsage, fmt.Errorf("%w: matrix takes no positional arguments (got %q): pick with --systems and --scenarios", errUsage, fs.Args())
	}
	return runMatrix(ctx, f, stdout, stderr)
}

// registerMatrix registers the flags of one run that the matrix shares with 'simrun run'.
func (f *runFlags) registerMatrix(fs *flag.FlagSet) {
	var common flag.FlagSet
	f.registerCommon(&common)
	common.VisitAll(func(fl *flag.Flag) {
		switch fl.Name {
		case "system", "exec", "kind":
			return // the matrix takes --systems (exec:PATH for a process system)
		case "seed":
			fs.Var(fl.Value, fl.Name, "first seed of every cell (default 1: the matrix compares systems on fixed seeds)")
		case "time-scale":
			fs.Var(fl.Value, fl.Name, "multiply every spec duration (default 0.1: ten times faster)")
		default:
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
}

// runMatrix plans every cell, runs them, prints the table and writes it with an index under the output
// directory.
func runMatrix(ctx context.Context, f matrixFlags, stdout, stderr io.Writer) (int, error) {
	cells, jobs, base, err := planMatrix(&f)
	if err != nil {
		return ExitUsage, err
	}
	var dirs []string
	for _, j := range jobs {
		dirs = append(dirs, j.dir)
	}
	col, err := claimOutputs(base, reports.KindMatrix, dirs)
	if err != nil {
		return ExitUsage, err
	}
	for i := range jobs {
		jobs[i].col = col
	}
	// With --markdown, stdout carries the table alone, for a file or a pull-request comment; the
	// progress goes to stderr.
	log := stdout
	if f.markdown {
		log = stderr
	}
	fmt.Fprintf(log, "matrix: %d systems × %d scenarios, %d cells, %d runs (seeds %d..%d, time scale %g), %d at a time\n",
		countRows(cells), countCols(cells), len(cells), len(jobs), f.run.seed, f.run.seed+int64(f.seeds)-1, f.run.timeScale, f.run.parallel)
	if f.run.virtual {
		n := 0
		for _, c := range f.refused {
			n += len(c)
		}
		fmt.Fprintf(log, "matrix: in virtual time; %d cells left blank, as virtual time cannot hold them (the notes say why)\n", n)
	}

	began := time.Now()
	results := make([]result, len(jobs))
	out := &syncWriter{w: log}
	order := longestFirst(jobs)
	var mu sync.Mutex
	next := 0
	var busy time.Duration // the runs' own times, summed
	var wg sync.WaitGroup
	for w := 0; w < f.run.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(jobs) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := order[next]
				next++
				mu.Unlock()
				start := time.Now()
				row, entry, err := runOne(ctx, jobs[i], true, io.Discard, stderr)
				took := time.Since(start).Round(100 * time.Millisecond)
				mu.Lock()
				busy += took
				mu.Unlock()
				if err != nil && ctx.Err() == nil {
					fmt.Fprintf(out, "  ERROR %s / %s seed %d: %s\n", jobs[i].opts.System.Name(), jobs[i].opts.Scenario.Name, jobs[i].opts.Seed, errText(err))
				} else if err == nil {
					fmt.Fprintf(out, "  %s %s / %s seed %d (%s)\n", rowWord(row), jobs[i].opts.System.Name(), jobs[i].opts.Scenario.Name, jobs[i].opts.Seed, took)
				}
				results[i] = result{idx: i, row: row, entry: entry, err: err, job: jobs[i]}
			}
		}()
	}
	wg.Wait()
	if !col.wrote() {
		col.abandon() // nothing ran: leave nothing behind, and a directory that was there as it was
	}
	if ctx.Err() != nil {
		return ExitInterrupted, fmt.Errorf("interrupted: partial histories saved under %s", base)
	}

	var entries []reports.SuiteEntry
	var errored []string
	for i, r := range results {
		c := &cells[i/f.seeds]
		rel, _ := filepath.Rel(base, r.job.dir)
		mr := matrixRun{seed: r.job.opts.Seed, dir: rel, replay: r.job.opts.Command}
		switch {
		case r.err != nil:
			mr.errored = true
			errored = append(errored, errText(r.err))
		default:
			mr.passed, mr.inconclusive = r.row.passed, r.row.inconclusive
			mr.words = violatedWords(r.row.outcomes)
			r.entry.Dir = rel
			entries = append(entries, r.entry)
		}
		c.runs = append(c.runs, mr)
	}
	code := matrixCode(cells)
	if len(entries) == 0 {
		return ExitUsage, fmt.Errorf("no run of the matrix could be set up: %s", strings.Join(errored, "; "))
	}
	notes := []string{fmt.Sprintf("seeds %d..%d at time scale %g; %d runs in %s, %d at a time", f.run.seed, f.run.seed+int64(f.seeds)-1,
		f.run.timeScale, len(jobs), time.Since(began).Round(time.Second), f.run.parallel)}
	if f.run.virtual {
		notes[0] = "in virtual time (an in-memory Redis and links, docs/virtual.md); " + notes[0]
		whys := slices.Sorted(maps.Keys(f.refused))
		for _, why := range whys {
			notes = append(notes, fmt.Sprintf("left blank (%s): %s", why, strings.Join(f.refused[why], ", ")))
		}
	}
	if f.markdown {
		fmt.Fprint(stdout, "\n"+reports.MatrixMarkdown(matrixModel(cells, f.seeds, nil, notes, base), true))
	} else {
		fmt.Fprint(stdout, "\n"+matrixPlain(cells, f.seeds))
		fmt.Fprint(stdout, failingRuns(cells, base))
	}
	if err := writeMatrix(base, matrixModel(cells, f.seeds, entries, notes, "")); err != nil {
		return ExitUsage, err
	}
	if err := writeVerdictsFile(filepath.Join(base, fileVerdicts), verdictsHeader(f), verdictsOf(cells)); err != nil {
		return ExitUsage, err
	}
	fmt.Fprintf(log, "matrix: %s (%d runs in %s, %d at a time; the runs took %s in all)\n", filepath.Join(base, fileMatrix),
		len(jobs), time.Since(began).Round(time.Second), f.run.parallel, busy.Round(time.Second))
	if len(errored) > 0 {
		return ExitUsage, fmt.Errorf("%d of %d runs could not be set up (the others ran; see the table): %s", len(errored), len(jobs), strings.Join(errored, "; "))
	}
	if code == ExitViolated {
		// Not an error of the command: Main would turn it into a usage error.
		fmt.Fprintln(stderr, "simrun: a cell came out unexpected (a reference system failed, or a baseline passed the cell its flaw shows in): see the table")
	}
	if code == ExitInconclusive {
		fmt.Fprintln(stderr, "simrun: INCONCLUSIVE: no cell went against its expectation, but a reference system's or a characteristic cell "+
			"could not be judged: the machine was too loaded (the harness's own lag); run it again on a quieter machine")
	}
	return code, nil
}

// matrixParallel is how many runs the matrix keeps going at once by default. A run spends its time
// waiting out its scenario, not computing: a cell took about 3 % of one core (6.8 s of CPU, the
// redis-servers' included, for 12 runs lasting 214 s), so four at a time use little of two cores while
// taking a quarter of the wall-clock time of one at a time.
const matrixParallel = 4

// longestFirst is the order the matrix starts its runs in: the longest scenarios first, so that the
// last to start are short and the workers finish together. The table keeps its own order.
func longestFirst(jobs []job) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return jobs[order[a]].opts.Scenario.Duration > jobs[order[b]].opts.Scenario.Duration
	})
	return order
}

// planMatrix validates the flags and every run before anything starts or is written.
func planMatrix(f *matrixFlags) ([]matrixCell, []job, string, error) {
	if f.seeds == 0 {
		f.seeds = 1
	}
	if f.run.parallel < 1 {
		return nil, nil, "", fmt.Errorf("%w: --parallel must be at least 1 (got %d)", errUsage, f.run.parallel)
	}
	if err := f.run.checkVirtual(); err != nil {
		return nil, nil, "", err
	}
	if err := checkBackend(f.run.redis); err != nil {
		return nil, nil, "", err
	}
	f.run.backend = resolveAuto(f.run.redis)
	if !f.run.timeScaleSet {
		f.run.timeScale = 0.1
	}
	if f.run.virtual {
		// Virtual time costs nothing to wait: spec timing unless --time-scale says otherwise, and one
		// bubble at a time in a process (a few hundred cells take a minute).
		f.run.backend, f.run.parallel = "virtual", 1
		if !f.run.timeScaleSet {
			f.run.timeScale = 1
		}
	}
	f.refused = map[string][]string{}
	if !f.run.seedSet {
		f.run.seed = 1 // fixed seeds: the matrix is a comparison, not an exploration
	}
	systemNames := sim.Systems()
	if f.systems != "" {
		var err error
		if systemNames, err = splitList("--systems", f.systems, checkSystemName); err != nil {
			return nil, nil, "", err
		}
	}
	var scenarioNames []string
	for _, n := range scenarios.Names() {
		// The composing nemesis's scenarios are for campaigns over many seeds, not for a comparison
		// on fixed ones; --scenarios names them to run them anyway.
		if sc, _ := scenarios.Get(n); sc.Explore == nil {
			scenarioNames = append(scenarioNames, n)
		}
	}
	if f.scenarios != "" && f.suite != "" {
		return nil, nil, "", fmt.Errorf("%w: --scenarios and --suite both choose the scenarios: give one of them", errUsage)
	}
	if f.scenarios != "" {
		var err error
		if scenarioNames, err = splitList("--scenarios", f.scenarios, checkScenarioName); err != nil {
			return nil, nil, "", err
		}
	}
	if f.suite != "" {
		su, err := scenarios.GetSuite(f.suite)
		if err != nil {
			return nil, nil, "", fmt.Errorf("%w: --suite: %v", errUsage, err)
		}
		if len(su.Scenarios) == 0 {
			return nil, nil, "", fmt.Errorf("%w: --suite %s draws its scenarios as it runs (simrun run --suite %s): name scenarios with --scenarios", errUsage, f.suite, f.suite)
		}
		scenarioNames = su.Scenarios
	}
	base := f.run.out
	if base == "" {
		base = filepath.Join("simrun-out", fmt.Sprintf("%s-matrix-%d", time.Now().Format("20060102-150405"), f.run.seed))
	}
	var cells []matrixCell
	var jobs []job
	for _, sysName := range systemNames {
		system, err := sim.Lookup(sysName)
		if err != nil {
			return nil, nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
		for col, scName := range scenarioNames {
			sc, _ := scenarios.Get(scName)
			if !fits(system, sc) || (f.cells != nil && !f.cells[[2]string{sysName, scName}]) {
				continue
			}
			var cellJobs []job
			unsupported := false
			for k := 0; k < f.seeds; k++ {
				o := sim.Options{System: system, Scenario: sc, Suite: "matrix", Seed: f.run.seed + int64(k), TimeScale: f.run.timeScale,
					Backend: f.run.backend, Toxiproxy: f.run.toxiproxy, Postgres: f.run.postgres, Instances: f.run.instances, Endpoints: f.run.endpoints,
					Virtual: f.run.virtual}
				sched, _, err := sim.Plan(o)
				if errors.Is(err, sim.ErrVirtual) {
					// A scenario virtual time cannot hold (a PostgreSQL, Sentinel or Cluster one, a restart
					// from an append-only file): the cell stays blank, and the note names it.
					f.refuse(sysName+" / "+scName, err)
					unsupported = true
					break
				}
				if errors.Is(err, chaos.ErrUnsupported) {
					// A fault this system cannot be put through (a stall of a process system's client):
					// the cell stays blank, as for a scenario of another topology.
					unsupported = true
					break
				}
				if err != nil {
					return nil, nil, "", fmt.Errorf("%w: %s on %s: %v", errUsage, sysName, scName, err)
				}
				// The backend this run uses, as 'simrun run' picks it: replay lines name it, not auto.
				if need, err := sim.TopologyNeed(system, sc.Topology); err == nil && !f.run.virtual {
					if spec, err := sim.BackendForScenario(f.run.backend, need, sched); err == nil {
						o.Backend = spec
					}
				}
				o.Command = replay(o, f.run)
				cellJobs = append(cellJobs, job{opts: o, dir: filepath.Join(base, pathSafe(sysName), fmt.Sprintf("%s-%d", scName, o.Seed))})
			}
			if unsupported {
				continue
			}
			cells = append(cells, matrixCell{system: sysName, scenario: scName, order: col})
			jobs = append(jobs, cellJobs...)
		}
	}
	if len(cells) == 0 && len(f.refused) > 0 {
		var whys []string
		for why, c := range f.refused {
			whys = append(whys, fmt.Sprintf("%s (%s)", strings.Join(c, ", "), why))
		}
		slices.Sort(whys)
		return nil, nil, "", fmt.Errorf("%w: virtual time holds none of these cells: %s; run them in real time (drop --virtual)", errUsage, strings.Join(whys, "; "))
	}
	if len(cells) == 0 {
		return nil, nil, "", fmt.Errorf("%w: no system of %s fits a scenario of %s: lease systems run lease scenarios, election systems the election scenarios of their backend",
			errUsage, strings.Join(systemNames, ", "), strings.Join(scenarioNames, ", "))
	}
	return cells, jobs, base, nil
}

// refuse leaves a cell blank that virtual time cannot hold, under the reason sim gave (what follows
// "not in virtual time: ", without the advice to run it in real time, which the note gives once).
func (f *matrixFlags) refuse(cell string, err error) {
	why := err.Error()
	if _, after, ok := strings.Cut(why, "not in virtual time: "); ok {
		why = after
	}
	why, _, _ = strings.Cut(why, "; run it in real time")
	f.refused[why] = append(f.refused[why], cell)
}

// splitList parses a comma-separated list, checking each name and refusing duplicates.
func splitList(flagName, s string, check func(string) error) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("%w: %s %q has an empty name: separate names with single commas", errUsage, flagName, s)
		}
		if err := check(n); err != nil {
			return nil, fmt.Errorf("%w: %s: %s", errUsage, flagName, strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		}
		if seen[n] {
			return nil, fmt.Errorf("%w: %s names %s twice", errUsage, flagName, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// fits reports whether a scenario is of the system's kind: lease scenarios for lease systems, election
// scenarios of the same backend for election systems.
func fits(system sim.System, sc sim.Scenario) bool {
	scKind, scPG := "lease", false
	if sc.System != "" {
		written, err := sim.Lookup(sc.System)
		if err != nil {
			return false
		}
		scKind, scPG = kindOf(written), usesPostgres(written)
	}
	need, err := sim.TopologyNeed(system, sc.Topology)
	if err != nil {
		return false // a system tied to one topology (Redlock's independent nodes) and a scenario tied to another
	}
	if _, err := sim.BackendForScenario("server", need, sc.Steps); err != nil {
		return false // e.g. a restart from snapshot files, which only a single private server has
	}
	return kindOf(system) == scKind && usesPostgres(system) == scPG
}

func usesPostgres(s sim.System) bool {
	p, ok := s.(sim.PostgresUser)
	return ok && p.UsesPostgres()
}

// violatedWords lists the cell words of the invariants violated or undecided, in the summary's order.
func violatedWords(outcomes map[string]checker.Outcome) []string {
	var words []string
	order := append([]string{checker.InvAssumptions}, invariantOrder...)
	for _, inv := range order {
		word := cellWords[inv]
		switch outcomes[inv] {
		case checker.Violated:
			words = append(words, word)
		case checker.Unknown:
			words = append(words, word+"?")
		case checker.Inconclusive:
			words = append(words, word+"~")
		}
	}
	return words
}

// text is what a cell shows: "pass", or the words of its runs that did not pass (an inconclusive run's
// end in "~"); with several seeds, how many of them failed (k/N), an inconclusive run counted apart,
// never as a failure.
func (c matrixCell) text(seeds int) string {
	failed, inconclusive, errored := 0, 0, 0
	seen := map[string]bool{}
	var words []string
	for _, r := range c.runs {
		switch {
		case r.errored:
			errored++
			continue
		case r.passed:
			continue
		case r.inconclusive:
			inconclusive++
		default:
			failed++
		}
		for _, w := range r.words {
			if !seen[w] {
				seen[w] = true
				words = append(words, w)
			}
		}
	}
	switch {
	case failed > 0 && len(words) == 0:
		words = []string{"fail"}
	case inconclusive > 0 && len(words) == 0:
		words = []string{"inconclusive"}
	}
	var s string
	switch {
	case failed == 0 && inconclusive == 0 && errored == 0:
		s = "pass"
	case failed == 0 && inconclusive == 0:
		s = "error"
	default:
		s = strings.Join(words, " ")
	}
	if seeds > 1 && (failed > 0 || inconclusive > 0 || errored > 0) {
		s = fmt.Sprintf("%d/%d %s", failed, seeds, s)
		var also []string
		if inconclusive > 0 {
			also = append(also, fmt.Sprintf("%d inconclusive", inconclusive))
		}
		if errored > 0 && (failed > 0 || inconclusive > 0) {
			also = append(also, fmt.Sprintf("%d error", errored))
		}
		if len(also) > 0 {
			s += " (" + strings.Join(also, ", ") + ")"
		}
	}
	return s
}

func countRows(cells []matrixCell) int { return len(rowsOf(cells)) }
func countCols(cells []matrixCell) int { return len(colsOf(cells)) }

func rowsOf(cells []matrixCell) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cells {
		if !seen[c.system] {
			seen[c.system] = true
			out = append(out, c.system)
		}
	}
	return out
}

func colsOf(cells []matrixCell) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cells {
		if !seen[c.scenario] {
			seen[c.scenario] = true
			out = append(out, c.scenario)
		}
	}
	// Lease scenarios, then Redis election ones, then PostgreSQL ones, each in the order asked for.
	idx := map[string]int{}
	for _, c := range cells {
		idx[c.scenario] = c.order
	}
	sort.SliceStable(out, func(a, b int) bool {
		ga, gb := groupOf(out[a]), groupOf(out[b])
		if ga != gb {
			return ga < gb
		}
		return idx[out[a]] < idx[out[b]]
	})
	return out
}

// Column groups: one table each in Markdown, since no system has cells in two of them.
var groupTitles = []string{"Lease systems", "Election on Redis", "Election on PostgreSQL"}

func groupOf(scenario string) int {
	sc, err := scenarios.Get(scenario)
	if err != nil || sc.System == "" {
		return 0
	}
	written, err := sim.Lookup(sc.System)
	switch {
	case err != nil || kindOf(written) != "election":
		return 0
	case usesPostgres(written):
		return 2
	}
	return 1
}

// firstFailing is the directory of the cell's first failing or errored run, "" when all passed.
func (c matrixCell) firstFailing() string {
	for _, r := range c.runs {
		if !r.passed && !r.errored {
			return r.dir
		}
	}
	return ""
}

// what says why a run that did not pass did not: the words of what it violated, or that it was
// inconclusive (neither a pass nor a failure), or could not be set up.
func (r matrixRun) what() string {
	words := strings.Join(r.words, " ")
	switch {
	case r.errored:
		return "could not be set up"
	case r.inconclusive && words != "":
		return "inconclusive (the harness ran too late to judge it): " + words
	case r.inconclusive:
		return "inconclusive (the harness ran too late to judge it)"
	case words == "":
		return "failed"
	}
	return words
}

// failingRuns lists, for a terminal, every run that did not pass with its report and replay command.
func failingRuns(cells []matrixCell, base string) string {
	var b strings.Builder
	for _, c := range cells {
		for _, r := range c.runs {
			if r.passed {
				continue
			}
			fmt.Fprintf(&b, "%s / %s seed %d: %s\n  report: %s\n  replay: %s\n", c.system, c.scenario, r.seed, r.what(),
				filepath.Join(base, r.dir, "report.html"), r.replay)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nruns that did not pass:\n" + b.String()
}

// writeMatrix writes the matrix's grid: index.html, summary.md and junit.xml, and matrix.md (the grid in
// Markdown under the name earlier versions gave it).
func writeMatrix(dir string, m reports.Matrix) error {
	if err := os.WriteFile(filepath.Join(dir, fileMatrix), []byte(reports.MatrixMarkdown(m, true)), 0o644); err != nil {
		return fmt.Errorf("write matrix: %w", err)
	}
	if err := reports.WriteMatrix(dir, m); err != nil {
		return fmt.Errorf("write matrix index: %w", err)
	}
	return nil
}

// pathSafe turns a system's name into one directory name that CI artifact uploaders accept: a process
// system's exec:PATH has a colon and slashes, which become underscores (exec:examples/py-lock ->
// exec_examples_py-lock). Letters, digits, '.', '-' and '_' are kept.
func pathSafe(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			b[i] = '_'
		}
	}
	return strings.Trim(string(b), ".")
}
