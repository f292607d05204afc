package simcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

// runFlags are the flags of 'simrun run' (and, in part, 'simrun bench').
type runFlags struct {
	suite        string
	instances    int
	endpoints    int
	seed         int64
	seedSet      bool
	timeScale    float64
	timeScaleSet bool
	redis        string
	out          string
	system       string
	exec         string // --exec: a process system given by its command line
	kind         string // --kind: the kind of the --exec system
	toxiproxy    string
	postgres     string
	duration     time.Duration
	quiet        bool
	systemSet    bool
	skipped      []string // suite scenarios left out for a system of another kind
	parallel     int
	parallelSet  bool
	// rerunInconclusive is how many more times a scenario is run, same seed, while it is inconclusive.
	rerunInconclusive int
	// repeat runs each scenario this many times on its seed (--repeat), for a pass rate.
	repeat int
	set    map[string]bool // the flags given on the command line
	// virtual runs in virtual time (sim.Options.Virtual); refused lists the scenarios of a suite that
	// virtual time cannot hold, with why.
	virtual bool
	refused []string
	backend string // f.redis with auto resolved: the backend that runs
}

// visit records which flags were given.
func (f *runFlags) visit(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	f.systemSet = f.set["system"] || f.set["exec"]
	f.parallelSet = f.set["parallel"]
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.suite, "suite", "", "run a suite: "+suiteNames())
	f.registerCommon(fs)
	fs.StringVar(&f.out, "out", "", "output directory (default ./simrun-out/<time>-<name>-<seed>): new, empty, or one simrun wrote of the same kind; never a run that has a history")
	fs.DurationVar(&f.duration, "duration", 10*time.Minute, "soak suite: keep drawing new nemesis runs until this much time is spent")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress line")
	fs.IntVar(&f.parallel, "parallel", 0, "run this many scenarios at once, each with its own Redis and proxies (default: the suite's, else 1)")
	f.repeat = 1
	fs.Func("repeat", "run each scenario N times on the same seed and report its pass rate: a seed fixes the faults, not the timing of everything else (default 1)", positiveInt(&f.repeat))
	fs.Func("rerun-inconclusive", "run an inconclusive scenario (the harness ran too late to judge it) again with the same seed, up to N more times (default 0)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("want a whole number of at least 0, got %q", s)
		}
		f.rerunInconclusive = n
		return nil
	})
}

// registerCommon registers the flags that choose what one scenario run is: shared by run and bench.
func (f *runFlags) registerCommon(fs *flag.FlagSet) {
	fs.Func("instances", "override the scenario's initial fleet size", positiveInt(&f.instances))
	fs.Func("endpoints", "override the scenario's number of endpoints", positiveInt(&f.endpoints))
	fs.Func("seed", "seed for every random choice (default: drawn from the clock and printed)", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			// A seed names a run's directory and its replay command: a sign would read as a flag.
			return fmt.Errorf("want a whole number of at least 0, got %q", s)
		}
		f.seed, f.seedSet = n, true
		return nil
	})
	fs.Func("time-scale", "multiply every spec duration (0.1 = ten times faster; default: the suite's, else 0.1)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("want a number, got %q", s)
		}
		if v <= 0 {
			return fmt.Errorf("must be > 0 (got %s): 1 is spec time, 0.1 ten times faster", s)
		}
		f.timeScale, f.timeScaleSet = v, true
		return nil
	})
	fs.StringVar(&f.redis, "redis", "auto", "backend: auto, server, embedded, addr=HOST:PORT or container; server:rdb or server:aof for a private server with persistence; sentinel for a private primary, two replicas and three sentinels; independent for three independent private nodes (Redlock); cluster for a private Redis Cluster of three primaries and three replicas")
	fs.StringVar(&f.system, "system", "reference", "system under test (see simrun list); exec:PATH for a process system's file (docs/protocol.md)")
	fs.StringVar(&f.exec, "exec", "", "run a process system: the command each instance runs, split as a shell would, without one (docs/protocol.md)")
	fs.StringVar(&f.kind, "kind", "", "with --exec: lease (the default) or election")
	fs.StringVar(&f.toxiproxy, "toxiproxy", "", "URL of an external toxiproxy-server (default: embedded)")
	fs.StringVar(&f.postgres, "postgres", "", "PostgreSQL for the election-postgres scenarios (default: $TENURE_PG_URL, else "+sim.DefaultPostgresURL+")")
	fs.BoolVar(&f.virtual, "virtual", false, "run in virtual time: the fleet, the faults and an in-memory Redis in a bubble whose clock jumps whenever nothing can run (spec timing by default, nothing is ever late; docs/virtual.md); scenarios that need a process system, PostgreSQL, Sentinel, Cluster or an AOF are refused")
}

// positiveInt parses a flag value that must be a whole number of at least 1.
func positiveInt(dst *int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("want a whole number of at least 1, got %q", s)
		}
		*dst = n
		return nil
	}
}

// parseInterleaved lets positional arguments and flags come in any order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// job is one scenario to run with its final options.
type job struct {
	opts sim.Options
	dir  string
	col  *collection // the suite or matrix directory dir belongs to; nil for a run of its own
	// lean writes only result.json for a run that passes: what a campaign keeps of it anyway.
	lean bool
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var f runFlags
	fs := flag.NewFlagSet("simrun run", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line; --help goes to stdout
	fs.Usage = func() {}
	f.register(fs)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, runHelp)
			printFlags(stdout, fs)
			return ExitOK, err
		}
		return ExitUsage, flagError("run", fs, err)
	}
	f.visit(fs)
	jobs, base, err := plan(&f, names)
	if err != nil {
		return ExitUsage, err
	}
	if f.repeat > 1 {
		if f.suite == "soak" {
			return ExitUsage, fmt.Errorf("%w: --repeat has no use with the soak suite, which draws a new seed for every run: leave one of them out", errUsage)
		}
		jobs, base = repeated(jobs, base, f.repeat)
	}
	var dirs []string
	for _, j := range jobs {
		dirs = append(dirs, j.dir)
	}
	col, err := claimOutputs(base, reports.KindSuite, dirs)
	if err != nil {
		return ExitUsage, err
	}
	for i := range jobs {
		jobs[i].col = col
	}
	replayAll := jobs[0].opts.Command
	if len(jobs) > 1 || f.suite != "" {
		replayAll = replaySet(f, names)
	}
	fmt.Fprintf(stdout, "seed %d  (replay: %s)\n", f.seed, replayAll)
	if len(f.refused) > 0 {
		fmt.Fprintf(stdout, "left out (virtual time cannot hold them):\n  %s\n", strings.Join(f.refused, "\n  "))
	}
	if len(f.skipped) > 0 {
		fmt.Fprintf(stdout, "left out (written for another kind of system than %s): %s\n", f.system, strings.Join(f.skipped, ", "))
	}

	rows, entries, code, err := runJobs(ctx, &f, jobs, base, stdout, stderr)
	if col != nil && !col.wrote() {
		col.abandon() // nothing ran: leave no half-run behind, and a directory that was there as it was
	}
	if err != nil && !errors.Is(err, errSomeErrored) {
		return code, err
	}
	runErr := err
	printSummary(stdout, rows)
	if f.repeat > 1 {
		printPassRates(stdout, rows)
	}
	if base != "" {
		name := f.suite
		if name == "" {
			name = "run"
		}
		if err := reports.WriteSuite(base, name, entries); err != nil {
			return ExitUsage, fmt.Errorf("write suite index: %w", err)
		}
		fmt.Fprintf(stdout, "index: %s\n", filepath.Join(base, "index.html"))
	}
	return code, runErr
}

// repeated makes n jobs of each job, on its seed, in a directory of their own each under base (the
// run's directory when it had none: the repeats are a collection of runs).
func repeated(jobs []job, base string, n int) ([]job, string) {
	if base == "" {
		base = jobs[0].dir
	}
	var out []job
	for _, j := range jobs {
		for k := 1; k <= n; k++ {
			r := j
			r.dir = filepath.Join(base, fmt.Sprintf("%s-r%d", j.opts.Scenario.Name, k))
			out = append(out, r)
		}
	}
	return out, base
}

// errSomeErrored marks a run of several scenarios in which some could not be set up: the others ran,
// and their summary and index are still written.
var errSomeErrored = errors.New("setup failed")

// result is one finished job.
type result struct {
	idx   int
	row   summaryRow
	entry reports.SuiteEntry
	err   error
	job   job
}

// runJobs runs the jobs on f.parallel workers and returns their rows and suite entries in job order. A
// soak keeps adding jobs (next seed) until its duration is spent.
func runJobs(ctx context.Context, f *runFlags, jobs []job, base string, stdout, stderr io.Writer) ([]summaryRow, []reports.SuiteEntry, int, error) {
	out := &syncWriter{w: stdout}
	deadline := time.Now().Add(f.duration)
	var mu sync.Mutex
	next := 0
	take := func() (job, int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return job{}, 0, false
		}
		if next == len(jobs) && f.suite == "soak" && time.Now().Before(deadline) {
			last := jobs[len(jobs)-1]
			last.opts.Seed++
			last.opts.Command = replay(last.opts, *f)
			last.dir = filepath.Join(base, fmt.Sprintf("%s-%d", last.opts.Scenario.Name, last.opts.Seed))
			jobs = append(jobs, last)
		}
		if next == len(jobs) {
			return job{}, 0, false
		}
		next++
		return jobs[next-1], next - 1, true
	}
	workers := f.parallel
	if workers < 1 {
		workers = 1
	}
	quiet := f.quiet || workers > 1
	var results []result
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, idx, ok := take()
				if !ok {
					return
				}
				row, entry, err := runWithReruns(ctx, j, f.rerunInconclusive, quiet, out, stderr)
				if err != nil && ctx.Err() == nil && len(jobs) > 1 {
					// One scenario that cannot be set up (a backend that does not come up in time, say)
					// is that scenario's error: the others still run, and the exit code says so. (A single
					// scenario's error is the run's, said once by Main.)
					fmt.Fprintf(out, "  ERROR %s\n", errText(err))
				}
				mu.Lock()
				results = append(results, result{idx: idx, row: row, entry: entry, err: err, job: j})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(results, func(a, b int) bool { return results[a].idx < results[b].idx })

	var rows []summaryRow
	var entries []reports.SuiteEntry
	code := ExitOK
	var firstErr error
	var errored []string
	ran := 0
	for _, r := range results {
		if r.err != nil {
			if ctx.Err() != nil {
				if r.row.scenario != "" {
					rows = append(rows, r.row) // interrupted, but its partial reports were written
				} else {
					// Interrupted while it was being set up: nothing recorded.
					rows = append(rows, summaryRow{scenario: r.job.opts.Scenario.Name, interrupted: true, outcomes: map[string]checker.Outcome{}})
				}
				continue
			}
			if firstErr == nil {
				firstErr = r.err
			}
			errored = append(errored, errText(r.err))
			rows = append(rows, summaryRow{scenario: r.job.opts.Scenario.Name, errored: true, outcomes: map[string]checker.Outcome{}})
			continue
		}
		ran++
		rows = append(rows, r.row)
		if base != "" {
			rel, _ := filepath.Rel(base, r.job.dir)
			r.entry.Dir = rel
			entries = append(entries, r.entry)
		}
		code = worseExit(code, rowExit(r.row))
	}
	if ctx.Err() != nil {
		// The scenarios that never started are listed as not run.
		for _, j := range jobs[next:] {
			rows = append(rows, summaryRow{scenario: j.opts.Scenario.Name, notRun: true, outcomes: map[string]checker.Outcome{}})
		}
		printSummary(out, rows)
		where := jobs[0].dir
		if base != "" {
			where = base
		}
		return rows, entries, ExitInterrupted, fmt.Errorf("interrupted: partial histories saved under %s", where)
	}
	if firstErr != nil {
		if len(jobs) == 1 {
			return rows, entries, ExitUsage, firstErr
		}
		return rows, entries, ExitUsage, fmt.Errorf("%w: %d of %d scenarios could not be set up (the others ran; see the summary): %s",
			errSomeErrored, len(errored), len(jobs), strings.Join(errored, "; "))
	}
	return rows, entries, code, nil
}

// syncWriter serialises writes from parallel runs.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// plan validates everything before anything starts: names, systems, options, schedules, and that every
// flag given applies to what runs.
func plan(f *runFlags, names []string) ([]job, string, error) {
	if f.suite != "" && len(names) > 0 {
		return nil, "", fmt.Errorf("%w: give scenario names or --suite, not both", errUsage)
	}
	if f.suite == "" && len(names) == 0 {
		return nil, "", fmt.Errorf("%w: name at least one scenario or a --suite (simrun list shows them)", errUsage)
	}
	if f.parallelSet && f.parallel < 1 {
		return nil, "", fmt.Errorf("%w: --parallel must be at least 1 (got %d)", errUsage, f.parallel)
	}
	if err := checkBackend(f.redis); err != nil {
		return nil, "", err
	}
	if err := f.checkVirtual(); err != nil {
		return nil, "", err
	}
	if f.set["duration"] && f.suite != "soak" {
		return nil, "", fmt.Errorf("%w: --duration applies only to --suite soak, which repeats the random nemesis until it is spent; leave it out", errUsage)
	}
	for _, n := range names {
		if err := checkScenarioName(n); err != nil {
			return nil, "", err
		}
	}
	scale := 0.1
	label := ""
	if f.suite != "" {
		if err := checkSuiteName(f.suite); err != nil {
			return nil, "", err
		}
		su, err := scenarios.GetSuite(f.suite)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
		names, scale, label = su.Scenarios, su.TimeScale, "suite-"+su.Name
		if !f.parallelSet && su.Parallel > 0 {
			f.parallel = su.Parallel
		}
	}
	if f.parallelSet && f.suite != "soak" && len(names) == 1 {
		return nil, "", fmt.Errorf("%w: --parallel applies to runs of several scenarios; %s is one: leave it out", errUsage, names[0])
	}
	if f.virtual {
		// Virtual time costs nothing to wait: spec timing, and one bubble at a time in a process.
		scale = 1
		f.parallel = 1
	}
	if f.timeScaleSet {
		scale = f.timeScale
	}
	f.timeScale = scale
	chosen, err := f.chooseSystem()
	if err != nil {
		return nil, "", err
	}
	f.backend = resolveAuto(f.redis)
	if f.virtual {
		f.backend = "virtual"
	}
	if !f.seedSet {
		f.seed = time.Now().UnixNano() % 1_000_000_000
	}
	stamp := time.Now().Format("20060102-150405")
	var base string
	if len(names) > 1 || f.suite != "" {
		if label == "" {
			label = "run"
		}
		base = f.out
		if base == "" {
			base = filepath.Join("simrun-out", fmt.Sprintf("%s-%s-%d", stamp, label, f.seed))
		}
	}
	var jobs []job
	f.skipped, f.refused = nil, nil
	usesPostgres := false
	for _, n := range names {
		sc, err := scenarios.Get(n)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
		// A scenario written for one system (an election backend) uses it unless --system says otherwise;
		// a suite given another kind of system (a lease system for election scenarios, or the reverse)
		// leaves those scenarios out.
		system := chosen
		if sc.System != "" || f.systemSet {
			written := "reference"
			if sc.System != "" {
				written = sc.System
			}
			ws, err := sim.Lookup(written)
			if err != nil {
				return nil, "", fmt.Errorf("%w: %v", errUsage, err)
			}
			switch {
			case !f.systemSet:
				system = ws
			case kindOf(ws) != kindOf(chosen):
				if f.suite == "" {
					return nil, "", fmt.Errorf("%w: scenario %s is for %s systems and %s is %s %s system: pick one of the %s scenarios (simrun list) or %s %s system", errUsage, sc.Name, kindOf(ws), chosen.Name(), article(kindOf(chosen)), kindOf(chosen), kindOf(chosen), article(kindOf(ws)), kindOf(ws))
				}
				f.skipped = append(f.skipped, sc.Name)
				continue
			}
		}
		if pu, ok := system.(sim.PostgresUser); ok && pu.UsesPostgres() {
			usesPostgres = true
		}
		o := sim.Options{System: system, Scenario: sc, Suite: f.suite, Seed: f.seed, TimeScale: scale,
			Backend: f.backend, Toxiproxy: f.toxiproxy, Postgres: f.postgres, Instances: f.instances, Endpoints: f.endpoints,
			Virtual: f.virtual}
		if f.virtual {
			o.Backend = "virtual"
		}
		sched, _, err := sim.Plan(o)
		if f.virtual && f.suite != "" && errors.Is(err, sim.ErrVirtual) {
			// A suite in virtual time runs what virtual time holds and names the rest.
			f.refused = append(f.refused, fmt.Sprintf("%s (%v)", sc.Name, err))
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("%w: %v", errUsage, err)
		}
		// The backend this scenario runs on: a restart from files turns server into server:rdb or :aof, a
		// Sentinel scenario turns it into sentinel, a Redlock system into independent.
		if need, err := sim.TopologyNeed(system, sc.Topology); err == nil && !f.virtual {
			if spec, err := sim.BackendForScenario(f.backend, need, sched); err == nil {
				o.Backend = spec
			}
		}
		o.Command = replay(o, *f)
		dir := f.out
		if base != "" {
			dir = filepath.Join(base, sc.Name)
		} else if dir == "" {
			dir = filepath.Join("simrun-out", fmt.Sprintf("%s-%s-%d", stamp, sc.Name, f.seed))
		}
		jobs = append(jobs, job{opts: o, dir: dir})
	}
	if len(jobs) == 0 {
		return nil, "", fmt.Errorf("%w: suite %s has no scenario for a %s system like %s", errUsage, f.suite, kindOf(chosen), chosen.Name())
	}
	if f.set["postgres"] && !usesPostgres {
		return nil, "", fmt.Errorf("%w: --postgres applies only to scenarios on PostgreSQL (election-*-pg); none of these is: leave it out", errUsage)
	}
	return jobs, base, nil
}

// checkVirtual refuses flags that name real parts alongside --virtual.
func (f *runFlags) checkVirtual() error {
	if !f.virtual {
		return nil
	}
	for _, name := range []string{"redis", "toxiproxy", "postgres", "exec"} {
		if f.set[name] {
			return fmt.Errorf("%w: --%s names a real part, and --virtual runs on its own in-memory Redis and links: leave one of them out", errUsage, name)
		}
	}
	if f.parallelSet {
		return fmt.Errorf("%w: --parallel has no use with --virtual (one bubble at a time in a process; a campaign runs a process per core): leave it out", errUsage)
	}
	return nil
}

// resolveAuto names the backend that auto stands for on this machine: a private redis-server when the
// binary is installed, else the embedded one. Other specs are returned as they are.
func resolveAuto(spec string) string {
	if spec != "" && spec != "auto" {
		return spec
	}
	if _, ok := redisserver.Available(); ok {
		return "server"
	}
	return "embedded"
}

// kindOf is "lease" or "election".
// article is the indefinite article for a kind's name.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func kindOf(s sim.System) string {
	if k, ok := s.(sim.KindReporter); ok {
		return k.Kind()
	}
	return "lease"
}

// replay is the one-line command that reproduces a run.
func replay(o sim.Options, f runFlags) string {
	parts := []string{program() + " run", o.Scenario.Name, fmt.Sprintf("--seed %d", o.Seed), fmt.Sprintf("--time-scale %g", o.TimeScale),
		systemArg(o.System), "--redis " + o.Backend}
	if o.Virtual {
		parts[len(parts)-1] = "--virtual"
	}
	if f.instances > 0 {
		parts = append(parts, fmt.Sprintf("--instances %d", f.instances))
	}
	if f.endpoints > 0 {
		parts = append(parts, fmt.Sprintf("--endpoints %d", f.endpoints))
	}
	if f.toxiproxy != "" {
		parts = append(parts, "--toxiproxy "+f.toxiproxy)
	}
	if f.postgres != "" && o.Scenario.System == "election-postgres" {
		parts = append(parts, "--postgres "+f.postgres)
	}
	return strings.Join(parts, " ")
}

// replaySet is the command that replays a suite or a list of scenarios.
func replaySet(f runFlags, names []string) string {
	parts := []string{program() + " run"}
	if f.suite != "" {
		parts = append(parts, "--suite "+f.suite)
	} else {
		parts = append(parts, names...)
	}
	parts = append(parts, fmt.Sprintf("--seed %d", f.seed), fmt.Sprintf("--time-scale %g", f.timeScale), "--redis "+f.backend)
	if f.systemSet {
		parts = append(parts, f.systemArg())
	}
	if f.toxiproxy != "" {
		parts = append(parts, "--toxiproxy "+f.toxiproxy)
	}
	if f.postgres != "" {
		parts = append(parts, "--postgres "+f.postgres)
	}
	if f.instances > 0 {
		parts = append(parts, fmt.Sprintf("--instances %d", f.instances))
	}
	if f.endpoints > 0 {
		parts = append(parts, fmt.Sprintf("--endpoints %d", f.endpoints))
	}
	return strings.Join(parts, " ")
}

// runOne runs a job, checks it and writes its reports, even when interrupted.
func runOne(ctx context.Context, j job, quiet bool, stdout, stderr io.Writer) (summaryRow, reports.SuiteEntry, error) {
	// Checked again here, as the run is about to write: a soak's next seed was not planned, and a
	// directory may have changed since the command checked it.
	if err := reports.CheckOut(j.dir, reports.KindRun); err != nil {
		return summaryRow{}, reports.SuiteEntry{}, outDirError("run directory", err)
	}
	_, statErr := os.Stat(j.dir)
	created := os.IsNotExist(statErr)
	_, markErr := os.Stat(filepath.Join(j.dir, reports.FileMarker))
	hadMarker := markErr == nil
	if err := reports.WriteMarker(j.dir, reports.Marker{Kind: reports.KindRun}); err != nil {
		return summaryRow{}, reports.SuiteEntry{}, fmt.Errorf("create output directory: %w", err)
	}
	if err := j.col.add(j.dir); err != nil {
		return summaryRow{}, reports.SuiteEntry{}, err
	}
	logPath := filepath.Join(j.dir, reports.FileLog)
	logf, err := os.Create(logPath)
	if err != nil {
		return summaryRow{}, reports.SuiteEntry{}, err
	}
	defer logf.Close()
	o := j.opts
	o.Log = logf
	if !quiet && isTerminal(stderr) {
		o.Progress = func(p sim.Progress) {
			fmt.Fprintf(stderr, "\r\033[K[%s] %s / %s  live %d  events %d  %s", o.Scenario.Name,
				p.Elapsed.Round(100*time.Millisecond), p.Total.Round(100*time.Millisecond), p.Live, p.Events, p.Last)
		}
	}
	fmt.Fprintf(stdout, "running %s (system %s, backend %s, seed %d, time scale %g)\n", o.Scenario.Name, o.System.Name(), o.Backend, o.Seed, o.TimeScale)
	res, err := sim.Run(ctx, o)
	if o.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		// Nothing ran: leave no half-run behind, and nothing of the user's touched.
		_ = logf.Close()
		switch {
		case created:
			_ = os.RemoveAll(j.dir)
		case !hadMarker:
			_ = os.Remove(logPath)
			_ = os.Remove(filepath.Join(j.dir, reports.FileMarker))
		default:
			_ = os.Remove(logPath)
		}
		if created || !hadMarker {
			_ = j.col.remove(j.dir)
		}
		return summaryRow{}, reports.SuiteEntry{}, fmt.Errorf("%s: %w", o.Scenario.Name, err)
	}
	for _, fe := range res.FaultErrors {
		fmt.Fprintf(stderr, "warning: %s: fault failed, the verdict will be unknown: %s\n", o.Scenario.Name, fe)
	}
	for _, ce := range res.CleanupErrors {
		fmt.Fprintf(stderr, "warning: %s: clean-up after the run: %s\n", o.Scenario.Name, ce)
	}
	if err := os.WriteFile(filepath.Join(j.dir, reports.FileSchedule), []byte(res.Schedule.String()), 0o644); err != nil {
		return summaryRow{}, reports.SuiteEntry{}, err
	}
	row, entry, err := judgeLean(j.dir, res.History, j.lean)
	if err != nil {
		return row, entry, err
	}
	if res.History.Meta.Interrupted {
		row.interrupted = true
		fmt.Fprintf(stdout, "  INTERRUPTED %s after %s: partial history saved  report: %s\n", o.Scenario.Name,
			res.History.Meta.Duration.Round(100*time.Millisecond), filepath.Join(j.dir, "report.html"))
		return row, entry, context.Canceled
	}
	fmt.Fprintf(stdout, "  %s %s: %s  report: %s\n", rowWord(row), o.Scenario.Name, row.detail, filepath.Join(j.dir, "report.html"))
	return row, entry, nil
}

// judge checks a history and writes every report file into dir; keepHistory leaves the history.jsonl
// already there untouched.
func judge(dir string, h history.History, keepHistory bool) (summaryRow, reports.SuiteEntry, error) {
	opts := checker.DefaultOptions()
	opts.MaxViolations = reports.MaxListedViolations // the report marks and counts every violation
	rep := checker.Check(h, opts)
	passed := reports.Judge(rep, reports.ExpectOf(h.Meta))
	judged := time.Now()
	if err := writeReports(dir, h, rep, passed, opts, keepHistory); err != nil {
		return summaryRow{}, reports.SuiteEntry{}, err
	}
	row := newSummaryRow(h.Meta, rep, passed)
	row.judged = judged
	return row, reports.SuiteEntry{Meta: h.Meta, Report: rep, Passed: passed}, nil
}

// judgeLean is judge for a new run; with lean, a run that passes gets its result.json alone.
func judgeLean(dir string, h history.History, lean bool) (summaryRow, reports.SuiteEntry, error) {
	if !lean {
		return judge(dir, h, false)
	}
	opts := checker.DefaultOptions()
	opts.MaxViolations = reports.MaxListedViolations
	rep := checker.Check(h, opts)
	passed := reports.Judge(rep, reports.ExpectOf(h.Meta))
	judged := time.Now()
	var err error
	if passed {
		err = reports.WriteRun(dir, reports.Run{History: h, Report: rep, Passed: passed, Expected: h.Meta.Expect, ResultOnly: true})
	} else {
		err = writeReports(dir, h, rep, passed, opts, false)
	}
	if err != nil {
		return summaryRow{}, reports.SuiteEntry{}, err
	}
	row := newSummaryRow(h.Meta, rep, passed)
	row.judged = judged
	return row, reports.SuiteEntry{Meta: h.Meta, Report: rep, Passed: passed}, nil
}

// writeReports writes every report file of a checked history into dir.
func writeReports(dir string, h history.History, rep checker.Report, passed bool, opts checker.Options, keepHistory bool) error {
	err := reports.WriteRun(dir, reports.Run{
		History: h, Report: rep, Passed: passed, Expected: h.Meta.Expect, KeepHistory: keepHistory,
		Linearizability: func(w io.Writer) error { return checker.VisualizeLinearizability(w, h, opts) },
	})
	if err != nil {
		return fmt.Errorf("write reports: %w", err)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
