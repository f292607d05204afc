package simcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/reports"
)

const campaignHelp = `Usage: simrun campaign SCENARIO... [flags]
       simrun campaign --suite NAME [flags]
       simrun campaign merge OUT SHARD_DIR...

Runs scenarios on many seeds: each scenario on each seed is one job. The seeds are drawn at random
(--seeds N) from a campaign seed, printed and saved so that the same campaign can run again, or given as
a range (--seed-range A-B). --shard i/n runs the i-th of n disjoint parts of the jobs, balanced by the
scenarios' run times: run each shard on its own machine (a CI job matrix, Kubernetes Indexed Jobs) with
the same arguments, then join their directories with 'simrun campaign merge'.

A run that does not pass keeps its whole directory (reports, history, logs) and its replay line; a run
that passes keeps only its result.json. The summary (printed, and summary.md) counts the runs by
scenario and by cause, with the seeds and replay lines of those that did not pass; index.html and
junit.xml list every run, campaign.json records the campaign for the merge.

merge joins the directories of every shard of one campaign into OUT: one index.html, junit.xml,
summary.md and campaign.json. It refuses shards of different campaigns, and a set with a shard missing
or given twice. The merged index links each run in its shard's directory: keep them side by side.

Exit status: 0 every run passed, 1 a run failed (for merge: or did not run), 2 usage or setup error (a
run that could not be set up included), 3 none failed but one is inconclusive (the harness ran too late
to judge a timing verdict), 130 interrupted (the summary of the runs that finished is
written, marked interrupted).

Flags:
`

// defaultCampaignSeeds is how many random seeds a campaign draws when neither --seeds nor --seed-range
// is given.
const defaultCampaignSeeds = 10

// campaignFlags are the flags of 'simrun campaign'.
type campaignFlags struct {
	run          runFlags
	seeds        int
	seedRange    string
	campaignSeed int64
	shard        int
	shards       int
	shardFrom    string // where --shard auto found the shard ("" when given as i/n)
	keep         bool
	// workerArgs are the arguments a virtual worker plans the campaign from (virtual time only).
	workerArgs []string
}

func (f *campaignFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.run.suite, "suite", "", "run the scenarios of a suite: ci, quick, full, sentinel, cluster, explore")
	var common flag.FlagSet
	f.run.registerCommon(&common)
	common.VisitAll(func(fl *flag.Flag) {
		if fl.Name != "seed" { // a campaign's seeds come from --seeds or --seed-range
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	fs.Func("seeds", fmt.Sprintf("run each scenario on this many random seeds, drawn from --campaign-seed (default %d)", defaultCampaignSeeds), positiveInt(&f.seeds))
	fs.StringVar(&f.seedRange, "seed-range", "", "run each scenario on the seeds FIRST to LAST instead (e.g. 1-10)")
	fs.Func("campaign-seed", "the seed the random seeds are drawn from (default: drawn from the clock and printed; required with --shard)", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want a decimal integer, got %q", s)
		}
		f.campaignSeed = n
		return nil
	})
	f.shard, f.shards = 1, 1
	fs.Func("shard", "run only part i of n of the jobs, e.g. 1/2 and 2/2 on two machines (default 1/1: all of them); auto: the shard of the CI job it runs in (docs/ci/)", func(s string) error {
		if s == "auto" {
			i, n, from, err := shardFromEnv(os.Getenv)
			if err != nil {
				return err
			}
			f.shard, f.shards, f.shardFrom = i, n, from
			return nil
		}
		i, n, err := parseShard(s)
		f.shard, f.shards = i, n
		return err
	})
	fs.StringVar(&f.run.out, "out", "", "output directory, new or empty (default ./simrun-out/<time>-campaign-<id>)")
	fs.IntVar(&f.run.parallel, "parallel", 0, "runs at once, each with its own Redis and proxies (default: the suite's, else 1)")
	fs.BoolVar(&f.keep, "keep", false, "keep the whole directory of runs that passed too, not only their result.json")
}

// newCampaignFlagSet is the flag set of 'simrun campaign', into f.
func newCampaignFlagSet(f *campaignFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("simrun campaign", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned as one line; --help goes to stdout
	fs.Usage = func() {}
	f.register(fs)
	return fs
}

func campaignCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 && args[0] == "merge" {
		return campaignMergeCmd(args[1:], stdout)
	}
	var f campaignFlags
	fs := newCampaignFlagSet(&f)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, campaignHelp)
			printFlags(stdout, fs)
			return ExitOK, err
		}
		return ExitUsage, flagError("campaign", fs, err)
	}
	f.run.visit(fs)
	def, jobs, err := planCampaign(&f, names)
	if err != nil {
		return ExitUsage, err
	}
	base := f.run.out
	if base == "" {
		label := "campaign-" + def.ID
		if def.Shards > 1 {
			label += fmt.Sprintf("-shard-%dof%d", f.shard, def.Shards)
		}
		base = filepath.Join("simrun-out", time.Now().Format("20060102-150405")+"-"+label)
	}
	// A campaign's directory is new or empty: its campaign.json records one campaign's shard.
	if err := reports.CheckOut(base, reports.KindCampaign); err != nil {
		return ExitUsage, outDirError("--out", err)
	}
	if entries, err := os.ReadDir(base); err == nil && len(entries) > 0 {
		return ExitUsage, fmt.Errorf("%w: --out %s already holds files: give a new or empty directory", errUsage, base)
	}
	var dirs []string
	for i := range jobs {
		jobs[i].dir = runDir(base, jobs[i].opts.Scenario.Name, jobs[i].opts.Seed)
		dirs = append(dirs, jobs[i].dir)
	}
	col, err := claimOutputs(base, reports.KindCampaign, dirs)
	if err != nil {
		return ExitUsage, err
	}
	for i := range jobs {
		jobs[i].col = col
	}
	if f.run.virtual {
		// The workers plan the same campaign: its seeds, once drawn, are given to them.
		f.workerArgs = append(slices.Clone(args), "--campaign-seed", strconv.FormatInt(f.campaignSeed, 10))
		if def.CampaignSeed == nil {
			f.workerArgs = slices.Clone(args)
		}
	}
	return runCampaign(ctx, &f, def, jobs, base, stdout, stderr)
}

// planCampaign checks the flags and plans every job of the campaign, in every shard: the scenarios
// (named, or the suite's) times the seeds, scenario by scenario, each planned as 'simrun run' plans it.
func planCampaign(f *campaignFlags, names []string) (campaignDef, []job, error) {
	var def campaignDef
	set := f.run.set
	switch {
	case set["seeds"] && set["seed-range"]:
		return def, nil, fmt.Errorf("%w: give --seeds (random seeds) or --seed-range (a range of seeds), not both", errUsage)
	case set["campaign-seed"] && set["seed-range"]:
		return def, nil, fmt.Errorf("%w: --campaign-seed draws random seeds; with --seed-range there is nothing to draw: leave it out", errUsage)
	case f.shards > 1 && !set["seed-range"] && !set["campaign-seed"]:
		return def, nil, fmt.Errorf("%w: --shard %d/%d needs --campaign-seed X (or --seed-range A-B), so that every shard draws the same seeds: pick a number and give it to every shard", errUsage, f.shard, f.shards)
	case set["parallel"] && f.run.parallel < 1:
		return def, nil, fmt.Errorf("%w: --parallel must be at least 1 (got %d)", errUsage, f.run.parallel)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return def, nil, fmt.Errorf("%w: %s is named twice: each scenario already runs on every seed", errUsage, n)
		}
		seen[n] = true
	}
	var seeds []int64
	if set["seed-range"] {
		lo, hi, err := parseSeedRange(f.seedRange)
		if err != nil {
			return def, nil, fmt.Errorf("%w: --seed-range: %v", errUsage, err)
		}
		for s := lo; s <= hi; s++ {
			seeds = append(seeds, s)
		}
		def.SeedRange = f.seedRange
	} else {
		n := f.seeds
		if n == 0 {
			n = defaultCampaignSeeds
		}
		if n > maxCampaignSeeds {
			return def, nil, fmt.Errorf("%w: --seeds %d is more than %d: split it into several campaigns", errUsage, n, maxCampaignSeeds)
		}
		if !set["campaign-seed"] {
			f.campaignSeed = time.Now().UnixNano() % 1_000_000_000
		}
		cs := f.campaignSeed
		def.CampaignSeed = &cs
		seeds = drawSeeds(cs, n)
	}

	// Each seed is planned as 'simrun run' plans a list of scenarios, so a campaign refuses what run
	// refuses and runs what run would. --parallel is the campaign's own: it spreads jobs, not scenarios.
	userParallel, parallelSet := f.run.parallel, f.run.parallelSet
	f.run.parallelSet = false
	perSeed := make([][]job, len(seeds))
	for k, s := range seeds {
		f.run.seed, f.run.seedSet = s, true
		js, _, err := plan(&f.run, names)
		if err != nil {
			return def, nil, err
		}
		perSeed[k] = js
	}
	if parallelSet {
		f.run.parallel = userParallel
	} else if f.run.virtual {
		f.run.parallel = runtime.NumCPU() // a worker process per core
	}
	f.run.parallel = max(f.run.parallel, 1)

	var jobs []job
	var costs []time.Duration
	for i := range perSeed[0] {
		def.Scenarios = append(def.Scenarios, perSeed[0][i].opts.Scenario.Name)
		for k := range seeds {
			j := perSeed[k][i]
			jobs = append(jobs, j)
			costs = append(costs, time.Duration(float64(j.opts.Scenario.Duration)*j.opts.TimeScale))
		}
	}
	shardOf := assignShards(costs, f.shards)
	def.Suite, def.Seeds, def.TimeScale, def.Shards = f.run.suite, seeds, f.run.timeScale, f.shards
	def.Instances, def.Endpoints = f.run.instances, f.run.endpoints
	for i, j := range jobs {
		def.Jobs = append(def.Jobs, plannedJob{Scenario: j.opts.Scenario.Name, Seed: j.opts.Seed, System: j.opts.System.Name(),
			Backend: j.opts.Backend, Shard: shardOf[i]})
	}
	def.ID = def.digest()
	def.Command = campaignCommand(f, names, def)
	return def, jobs, nil
}

// campaignCommand is the command that runs the same campaign again (every shard of it, without
// --shard).
func campaignCommand(f *campaignFlags, names []string, def campaignDef) string {
	parts := []string{program() + " campaign"}
	if f.run.suite != "" {
		parts = append(parts, "--suite "+f.run.suite)
	} else {
		parts = append(parts, names...)
	}
	if f.run.systemSet {
		parts = append(parts, f.run.systemArg())
	}
	if def.CampaignSeed != nil {
		parts = append(parts, fmt.Sprintf("--seeds %d --campaign-seed %d", len(def.Seeds), *def.CampaignSeed))
	} else {
		parts = append(parts, "--seed-range "+def.SeedRange)
	}
	parts = append(parts, fmt.Sprintf("--time-scale %g", def.TimeScale), "--redis "+f.run.backend)
	if f.run.virtual {
		parts[len(parts)-1] = "--virtual"
	}
	if f.run.instances > 0 {
		parts = append(parts, fmt.Sprintf("--instances %d", f.run.instances))
	}
	if f.run.endpoints > 0 {
		parts = append(parts, fmt.Sprintf("--endpoints %d", f.run.endpoints))
	}
	if f.run.toxiproxy != "" {
		parts = append(parts, "--toxiproxy "+f.run.toxiproxy)
	}
	if f.run.postgres != "" {
		parts = append(parts, "--postgres "+f.run.postgres)
	}
	return strings.Join(parts, " ")
}

// runCampaign runs this shard's jobs on f.run.parallel workers, longest first, then writes and prints
// the summary. A run that passed is pruned to its result.json as soon as it is judged, so a long
// campaign never holds more than its failures and the runs in progress.
func runCampaign(ctx context.Context, f *campaignFlags, def campaignDef, jobs []job, base string, stdout, stderr io.Writer) (int, error) {
	mine := def.jobsOfShard(f.shard)
	fmt.Fprintf(stdout, "campaign %s: %s\n", def.ID, campaignView{def: def}.about())
	if def.Shards > 1 {
		fmt.Fprintf(stdout, "shard %d/%d: %d of the %d runs", f.shard, def.Shards, len(mine), len(def.Jobs))
		if f.shardFrom != "" {
			fmt.Fprintf(stdout, " (--shard auto: from %s)", f.shardFrom)
		}
	} else {
		fmt.Fprintf(stdout, "%d runs", len(mine))
	}
	fmt.Fprintf(stdout, ", %d at a time, into %s\nrun it again: %s\n", f.run.parallel, base, def.again(f.shard))
	if len(f.run.refused) > 0 {
		fmt.Fprintf(stdout, "left out (virtual time cannot hold them):\n  %s\n", strings.Join(f.run.refused, "\n  "))
	}
	if len(f.run.skipped) > 0 {
		fmt.Fprintf(stdout, "left out (written for another kind of system than %s): %s\n", f.run.system, strings.Join(f.run.skipped, ", "))
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return ExitUsage, fmt.Errorf("create output directory: %w", err)
	}

	started := time.Now()
	records := make([]jobRecord, len(mine))
	var shardJobs []job
	for i, k := range mine {
		j := jobs[k]
		records[i] = jobRecord{Job: k, Scenario: j.opts.Scenario.Name, Seed: j.opts.Seed, Outcome: outNotRun, Replay: j.opts.Command}
		shardJobs = append(shardJobs, j)
	}
	out := &syncWriter{w: stdout}
	var mu sync.Mutex
	done := 0
	workers := make([]*worker, f.run.parallel)
	for w := range workers {
		workers[w] = &worker{args: f.workerArgs}
	}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	runPool(ctx, f.run.parallel, longestFirst(shardJobs), nil, func(w, i int) {
		j := shardJobs[i]
		began := time.Now()
		var row summaryRow
		var err error
		if f.run.virtual {
			row, err = runOnWorker(workers[w], mine[i], j)
		} else {
			row, _, err = runOne(ctx, j, true, io.Discard, stderr)
		}
		rec := finishRecord(ctx, records[i], row, err, j.dir, base, f.keep)
		rec.Took = time.Since(began).Round(100 * time.Millisecond)
		mu.Lock()
		records[i] = rec
		done++
		n := done
		mu.Unlock()
		printRecord(out, rec, n, len(mine))
	})

	interrupted := ctx.Err() != nil
	if len(shardJobs) > 0 {
		if err := shardJobs[0].col.flush(); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	m := campaignManifest{Campaign: def, Shard: f.shard, Started: started, Wall: time.Since(started), Interrupted: interrupted, Jobs: records}
	v := campaignView{def: def, shard: f.shard, records: records, interrupted: interrupted,
		shards: []mergedShard{{Shard: f.shard, Dir: ".", Started: started, Wall: m.Wall, Interrupted: interrupted}}}
	werr := writeCampaignOutputs(base, m, v)
	v.printText(stdout, base)
	if werr != nil {
		return ExitUsage, fmt.Errorf("write the campaign's summary: %w", werr)
	}
	fmt.Fprintf(stdout, "summary: %s\nindex: %s\n", filepath.Join(base, reports.FileSummary), filepath.Join(base, reports.FileIndex))
	if interrupted {
		return ExitInterrupted, fmt.Errorf("interrupted: the summary of the runs that finished is in %s", base)
	}
	return campaignExit(v)
}

// runOnWorker runs job k (j) on a virtual worker process, and records its directory in the campaign's
// collection as runOne would have.
func runOnWorker(w *worker, k int, j job) (summaryRow, error) {
	rep, err := w.run(k, j.dir)
	if err != nil {
		return summaryRow{}, fmt.Errorf("%s: %w", j.opts.Scenario.Name, err)
	}
	if _, serr := os.Stat(j.dir); serr == nil {
		if cerr := j.col.add(j.dir); cerr != nil {
			return summaryRow{}, cerr
		}
	}
	row := summaryRow{scenario: rep.Scenario}
	if rep.Err != "" {
		return row, errors.New(rep.Err)
	}
	return row, nil
}

// runPool calls run for each index of order on workers goroutines, in that order, until ctx is done or
// stop (nil: never) reports true before an index is handed out; run is given the worker's number too.
func runPool(ctx context.Context, workers int, order []int, stop func() bool, run func(w, i int)) {
	next := make(chan int)
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func() {
			for i := range next {
				run(w, i)
			}
			done <- struct{}{}
		}()
	}
	for _, i := range order {
		if ctx.Err() != nil || (stop != nil && stop()) {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	for w := 0; w < workers; w++ {
		<-done
	}
}

// finishRecord completes a job's record from what runOne returned, and prunes a passing run's
// directory to its result.json unless keep is set.
func finishRecord(ctx context.Context, rec jobRecord, row summaryRow, err error, dir, base string, keep bool) jobRecord {
	rel, _ := filepath.Rel(base, dir)
	if err != nil {
		switch {
		case ctx.Err() != nil && row.scenario != "":
			rec.Outcome, rec.Dir, rec.Kept = outInterrupted, rel, true // its partial history and reports are saved
		case ctx.Err() != nil:
			rec.Outcome = outInterrupted // stopped while it was being set up: nothing recorded
		default:
			rec.Outcome, rec.Error = outError, err.Error()
		}
		return rec
	}
	res, rerr := reports.ReadResult(dir)
	if rerr != nil {
		rec.Outcome, rec.Error, rec.Dir, rec.Kept = outError, rerr.Error(), rel, true
		return rec
	}
	rec.Outcome, rec.Causes, rec.Dir, rec.Kept = outcomeOf(res), causesOf(res), rel, true
	if rec.Outcome == outPass && !keep {
		if perr := pruneRun(dir); perr != nil {
			rec.Error = "pruning its directory: " + perr.Error()
		} else {
			rec.Kept = false
		}
	}
	return rec
}

// pruneRun deletes every file of a run directory but its result.json and its marker.
func pruneRun(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != reports.FileResult && e.Name() != reports.FileMarker {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// printRecord prints one finished job as a progress line.
func printRecord(w io.Writer, rec jobRecord, n, total int) {
	word := strings.ToUpper(rec.Outcome.word())
	switch rec.Outcome {
	case outPass:
		word = "PASS"
	case outFail:
		word = "FAIL"
	case outError:
		word = "ERROR"
	}
	line := fmt.Sprintf("[%d/%d] %s %s seed %d (%s)", n, total, word, rec.Scenario, rec.Seed, rec.Took)
	if rec.Outcome.bad() {
		line += ": " + rec.why() + "\n      replay: " + rec.Replay
	}
	fmt.Fprintln(w, line)
}

// campaignExit is the exit status of a campaign that ran to its end (or of a merge): setup errors
// first, as for 'simrun run', then anything that is not a pass, then inconclusive runs.
func campaignExit(v campaignView) (int, error) {
	n := v.count()
	if k := n[outError]; k > 0 {
		return ExitUsage, fmt.Errorf("%d of %d runs could not be set up (the others ran; see the summary)", k, len(v.records))
	}
	for _, o := range outcomeOrder {
		if o != outPass && o != outInconclusive && n[o] > 0 {
			return ExitViolated, nil
		}
	}
	if n[outInconclusive] > 0 {
		return ExitInconclusive, nil
	}
	return ExitOK, nil
}

// writeCampaignOutputs writes campaign.json, summary.md, index.html and junit.xml into dir. The index
// lists every run that left a result.json.
func writeCampaignOutputs(dir string, m campaignManifest, v campaignView) error {
	var errs []error
	var entries []reports.SuiteEntry
	for _, r := range v.records {
		if r.Dir == "" {
			continue
		}
		res, err := reports.ReadResult(filepath.Join(dir, r.Dir))
		if err != nil {
			if r.Outcome != outInterrupted { // a run stopped early may have left no result
				errs = append(errs, err)
			}
			continue
		}
		e := res.Entry(r.Dir)
		e.Pruned = !r.Kept
		entries = append(entries, e)
	}
	notes := []string{v.about() + ".", strings.ToUpper(v.timing()[:1]) + v.timing()[1:] + ". " + v.tally() + ".",
		"Run it again: " + v.def.again(v.shard)}
	if v.interrupted {
		notes = append(notes, "Interrupted: the runs that did not run are counted in summary.md.")
	}
	errs = append(errs,
		writeManifest(dir, m),
		reports.WriteIndex(dir, v.def.Suite, entries, reports.IndexOptions{Title: v.title(), Notes: notes, BySeed: true}),
		writeFileTo(filepath.Join(dir, reports.FileSummary), v.markdown),
	)
	return errors.Join(errs...)
}

// writeFileTo renders into path.
func writeFileTo(path string, render func(io.Writer) error) error {
	var b strings.Builder
	if err := render(&b); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// sortedRecords returns records in job order.
func sortedRecords(rs []jobRecord) []jobRecord {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b jobRecord) int { return a.Job - b.Job })
	return out
}
