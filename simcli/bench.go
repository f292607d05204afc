package simcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
	"github.com/tenurelabs/tenure/sim"
)

const benchHelp = `Usage: simrun bench SCENARIO... [flags]

Runs each scenario over seeds seed..seed+runs-1, one run at a time, and prints per scenario:
  failover p50/p99/max and max÷TTL   takeovers after a crash, restart, partition or pause: from the
                                     fault to the first poll of each affected endpoint by another instance
  handoff p50/p99                    the same for graceful stops and voluntary releases
  cmds/inst/RI                       backend commands (the history's op events, plus the bookkeeping reads
                                     its header counts) per instance per renewal interval: each
                                     instance's count over the run ÷ (run duration ÷ RI),
                                     mean over instances and runs (max in --json)
  peak RSS                           this process's peak resident memory while the scenario ran

Exit status: 0 every run held every invariant; 1 a run violated one or could not be decided (its
directory is kept, with its reports and the command that replays it); 2 usage or setup error.
Directories of runs that passed are deleted unless --keep is given.

Flags:
`

// benchFlags are the flags 'simrun bench' honours: the ones that choose what a run is, and its own.
type benchFlags struct {
	runFlags
	runs int
	keep bool
	json bool
	col  *collection // the directory the kept runs go into
}

// runOnlyFlags are flags of 'simrun run' that mean nothing to bench: suites and soak durations choose
// other work, parallel runs would skew the figures, and bench draws no progress line.
var runOnlyFlags = map[string]bool{"suite": true, "duration": true, "parallel": true, "quiet": true}

func (b *benchFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("simrun bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned; --help is printed to stdout by benchCmd
	fs.Usage = func() {}
	b.registerCommon(fs)
	fs.Lookup("time-scale").Usage = "multiply every spec duration (0.1 = ten times faster; default 0.1)"
	b.runs = 5
	fs.Func("runs", "number of seeds to run per scenario (default 5)", positiveInt(&b.runs))
	fs.StringVar(&b.out, "out", "", "directory for the runs (default ./simrun-out/<time>-bench-<seed>): new, empty, or a bench simrun wrote; a run's directory is <scenario>-<seed>")
	fs.BoolVar(&b.keep, "keep", false, "keep the directories (and reports) of runs that passed, too")
	fs.BoolVar(&b.json, "json", false, "print the figures as JSON, one object per line per scenario; per-run lines go to stderr")
	return fs
}

// benchCmd runs scenarios over several seeds and prints their failover, handoff, command-rate and
// memory figures.
func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var b benchFlags
	fs := b.flagSet()
	names, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printBenchHelp(stdout, fs)
			return ExitOK, err
		}
		return ExitUsage, benchFlagError(fs, err)
	}
	b.visit(fs)
	if len(names) == 0 {
		return ExitUsage, fmt.Errorf("%w: name at least one scenario to bench, e.g. simrun bench crash-failover (simrun list shows them)", errUsage)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return ExitUsage, fmt.Errorf("%w: %s is named twice: each scenario already runs --runs times", errUsage, n)
		}
		seen[n] = true
	}
	jobs, _, err := plan(&b.runFlags, names)
	if err != nil {
		return ExitUsage, err
	}

	base := b.out
	if base == "" {
		base = filepath.Join("simrun-out", fmt.Sprintf("%s-bench-%d", time.Now().Format("20060102-150405"), b.seed))
	}
	var dirs []string
	for _, j := range jobs {
		for i := 0; i < b.runs; i++ {
			d := runDir(base, j.opts.Scenario.Name, b.seed+int64(i))
			if _, err := os.Stat(d); err == nil {
				return ExitUsage, fmt.Errorf("%w: %s already exists: give another --out", errUsage, d)
			}
			dirs = append(dirs, d)
		}
	}
	if b.col, err = claimOutputs(base, reports.KindBench, dirs); err != nil {
		return ExitUsage, err
	}

	log := stdout
	if b.json {
		log = stderr
	}
	fmt.Fprintf(log, "bench: seeds %d..%d, time scale %g, redis %s\n", b.seed, b.seed+int64(b.runs)-1, b.timeScale, b.backend)

	var figs []benchFigures
	code, kept := ExitOK, 0
	for _, j := range jobs {
		fg, k, err := benchScenario(ctx, &b, j, base, log, stderr)
		kept += k
		if err != nil {
			if kept == 0 {
				b.col.abandon()
			}
			if ctx.Err() != nil {
				return ExitInterrupted, err
			}
			return ExitUsage, err
		}
		if fg.Failed > 0 {
			code = ExitViolated
		}
		figs = append(figs, fg)
	}
	if kept == 0 {
		b.col.abandon() // nothing kept: leave nothing behind, and a directory that was there as it was
	}
	if b.json {
		enc := json.NewEncoder(stdout)
		for _, fg := range figs {
			if err := enc.Encode(fg); err != nil {
				return ExitUsage, err
			}
		}
	} else {
		printBench(stdout, figs)
	}
	if code == ExitViolated {
		fmt.Fprintf(log, "some runs violated an invariant or could not be decided; their directories are kept under %s\n", base)
	}
	return code, nil
}

// printBenchHelp prints what bench measures and the flags it honours, spelled as they are given.
func printBenchHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, benchHelp)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		arg := " VALUE"
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			arg = ""
		}
		usage := f.Usage
		if f.DefValue != "" && f.DefValue != "false" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, arg, usage)
	})
	_ = tw.Flush()
}

// benchFlagError turns the flag package's complaint about a flag bench does not know into one that
// says which flags it does honour.
func benchFlagError(fs *flag.FlagSet, err error) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return fmt.Errorf("%w: %v (simrun bench --help lists the flags)", errUsage, err)
	}
	name := strings.TrimPrefix(msg, undefined)
	var honoured []string
	fs.VisitAll(func(f *flag.Flag) { honoured = append(honoured, "--"+f.Name) })
	if runOnlyFlags[name] {
		return fmt.Errorf("%w: --%s does not apply to bench; it honours %s", errUsage, name, strings.Join(honoured, " "))
	}
	return fmt.Errorf("%w: unknown flag --%s; bench honours %s", errUsage, name, strings.Join(honoured, " "))
}

// benchFigures is what bench reports for one scenario. Durations are in milliseconds; a figure with
// nothing to measure (no takeover of that kind) is null.
type benchFigures struct {
	Scenario  string  `json:"scenario"`
	System    string  `json:"system"`
	TimeScale float64 `json:"time_scale"`
	Runs      int     `json:"runs"`
	// Seeds is the first and last seed run.
	Seeds  [2]int64 `json:"seeds"`
	Failed int      `json:"failed"`
	// FailedRuns are the runs that violated an invariant or could not be decided, kept on disk.
	FailedRuns []failedRun `json:"failed_runs,omitempty"`
	LeaseTTLms float64     `json:"lease_ttl_ms"`

	Failovers     int      `json:"failovers"`
	FailoverP50ms *float64 `json:"failover_p50_ms"`
	FailoverP99ms *float64 `json:"failover_p99_ms"`
	FailoverMaxms *float64 `json:"failover_max_ms"`
	MaxOverTTL    *float64 `json:"failover_max_over_ttl"`
	// Unmeasured counts affected endpoints never polled again before the run ended.
	Unmeasured int `json:"failovers_unmeasured"`

	Handoffs     int      `json:"handoffs"`
	HandoffP50ms *float64 `json:"handoff_p50_ms"`
	HandoffP99ms *float64 `json:"handoff_p99_ms"`

	// CmdsPerInstPerRI is the mean over instances (of every run) of one instance's backend commands per
	// renewal interval; CmdsPerInstPerRIMax the largest.
	CmdsPerInstPerRI    *float64 `json:"cmds_per_instance_per_renewal"`
	CmdsPerInstPerRIMax *float64 `json:"cmds_per_instance_per_renewal_max"`
	RenewalIntervalms   float64  `json:"renewal_interval_ms"`
	RenewalSource       string   `json:"renewal_interval_source"`

	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	PeakRSSSrc   string  `json:"peak_rss_source"`
	WallSeconds  float64 `json:"wall_seconds"`
	// CPUSeconds is the CPU time (user and system) this process spent on the scenario's runs, the
	// checking and the reports included; RunsPerCPUSecond is runs per second of one core. A redis-server
	// backend's own CPU is not counted.
	CPUSeconds       float64 `json:"cpu_seconds"`
	RunsPerCPUSecond float64 `json:"runs_per_cpu_second"`
	// SpecSeconds is a run's duration at spec timing; SpecPerWall is the spec time run per wall second.
	SpecSeconds float64 `json:"spec_seconds"`
	SpecPerWall float64 `json:"spec_seconds_per_wall_second"`

	failovers, handoffs []time.Duration
	cmdRates            []float64
}

// failedRun is a kept run that did not pass.
type failedRun struct {
	Seed   int64  `json:"seed"`
	Dir    string `json:"dir"`
	Replay string `json:"replay"`
	Detail string `json:"detail"`
}

// benchScenario runs one scenario over every seed and returns its figures and how many run directories
// it kept.
func benchScenario(ctx context.Context, b *benchFlags, j job, base string, log, stderr io.Writer) (benchFigures, int, error) {
	fg := benchFigures{Scenario: j.opts.Scenario.Name, System: j.opts.System.Name(), TimeScale: j.opts.TimeScale,
		Runs: b.runs, Seeds: [2]int64{b.seed, b.seed + int64(b.runs) - 1}}
	rssReset := resetPeakRSS() == nil
	wall := time.Now()
	cpu0 := processCPU()
	kept := 0
	for i := 0; i < b.runs; i++ {
		o := j.opts
		o.Seed = b.seed + int64(i)
		o.Command = replay(o, b.runFlags)
		dir := runDir(base, o.Scenario.Name, o.Seed)
		keep, err := benchRun(ctx, b, o, dir, &fg, log, stderr)
		if keep {
			kept++
		}
		if err != nil {
			return fg, kept, err
		}
	}
	fg.WallSeconds = time.Since(wall).Seconds()
	fg.CPUSeconds = (processCPU() - cpu0).Seconds()
	if fg.CPUSeconds > 0 {
		fg.RunsPerCPUSecond = float64(b.runs) / fg.CPUSeconds
	}
	fg.SpecSeconds = j.opts.Scenario.Duration.Seconds()
	if fg.WallSeconds > 0 {
		fg.SpecPerWall = fg.SpecSeconds * float64(b.runs) / fg.WallSeconds
	}
	fg.summarise()
	fg.PeakRSSBytes, fg.PeakRSSSrc = peakRSS(rssReset)
	return fg, kept, nil
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runDir is where one seed of a scenario runs.
func runDir(base, scenario string, seed int64) string {
	return filepath.Join(base, fmt.Sprintf("%s-%d", scenario, seed))
}

// benchRun runs one seed of a scenario into dir, adds its measurements to fg, and reports whether dir
// was kept.
func benchRun(ctx context.Context, b *benchFlags, o sim.Options, dir string, fg *benchFigures, log, stderr io.Writer) (bool, error) {
	_, statErr := os.Stat(dir)
	if statErr == nil {
		return false, fmt.Errorf("%w: %s already exists: give another --out", errUsage, dir)
	}
	if err := reports.WriteMarker(dir, reports.Marker{Kind: reports.KindRun}); err != nil {
		return false, fmt.Errorf("create run directory: %w", err)
	}
	if err := b.col.add(dir); err != nil {
		return false, err
	}
	// A run that is not kept (it passed, or it could not be set up) leaves nothing behind.
	drop := func() error {
		err := os.RemoveAll(dir)
		return errors.Join(err, b.col.remove(dir))
	}
	logf, err := os.Create(filepath.Join(dir, reports.FileLog))
	if err != nil {
		_ = drop()
		return false, err
	}
	o.Log = logf
	started := time.Now()
	res, err := sim.Run(ctx, o)
	_ = logf.Close()
	if err != nil {
		_ = drop() // nothing ran: leave no half-run behind
		return false, fmt.Errorf("%s seed %d: %w", o.Scenario.Name, o.Seed, err)
	}
	for _, fe := range res.FaultErrors {
		fmt.Fprintf(stderr, "warning: %s seed %d: fault failed, the verdict will be unknown: %s\n", o.Scenario.Name, o.Seed, fe)
	}
	for _, ce := range res.CleanupErrors {
		fmt.Fprintf(stderr, "warning: %s seed %d: clean-up after the run: %s\n", o.Scenario.Name, o.Seed, ce)
	}
	h := res.History
	opts := checker.DefaultOptions()
	rep := checker.Check(h, opts)
	passed := reports.Judge(rep, reports.ExpectOf(h.Meta))
	interrupted := h.Meta.Interrupted || ctx.Err() != nil
	fg.add(h, rep)
	took := time.Since(started).Round(100 * time.Millisecond)
	if passed && !interrupted && !b.keep {
		fmt.Fprintf(log, "  %s seed %d: PASS (%s)\n", o.Scenario.Name, o.Seed, took)
		return false, drop()
	}
	if err := os.WriteFile(filepath.Join(dir, reports.FileSchedule), []byte(res.Schedule.String()), 0o644); err != nil {
		return true, err
	}
	if err := writeReports(dir, h, rep, passed, opts, false); err != nil {
		return true, err
	}
	if interrupted {
		return true, fmt.Errorf("interrupted: the partial run is saved in %s", dir)
	}
	if passed {
		fmt.Fprintf(log, "  %s seed %d: PASS (%s)  kept: %s\n", o.Scenario.Name, o.Seed, took, dir)
		return true, nil
	}
	detail := newSummaryRow(h.Meta, rep, false).detail
	fg.Failed++
	fg.FailedRuns = append(fg.FailedRuns, failedRun{Seed: o.Seed, Dir: dir, Replay: o.Command, Detail: detail})
	fmt.Fprintf(log, "  %s seed %d: FAIL (%s): %s\n    kept: %s  report: %s\n    replay: %s\n", o.Scenario.Name, o.Seed, took, detail,
		dir, filepath.Join(dir, "report.html"), o.Command)
	return true, nil
}

// gracefulFault reports whether a fault hands endpoints over on purpose (a graceful stop, a voluntary
// release): its takeovers are handoffs, measured apart from failovers after crashes and partitions.
func gracefulFault(name string) bool {
	n := strings.ToLower(name)
	return n == "stop" || strings.Contains(n, "release") || strings.Contains(n, "graceful")
}

// add takes one run's measurements.
func (f *benchFigures) add(h history.History, rep checker.Report) {
	f.LeaseTTLms = ms(h.Meta.LeaseTTL)
	for _, fo := range rep.Failovers {
		if fo.Latency < 0 {
			if !gracefulFault(fo.Fault) {
				f.Unmeasured++
			}
			continue
		}
		if gracefulFault(fo.Fault) {
			f.handoffs = append(f.handoffs, fo.Latency)
		} else {
			f.failovers = append(f.failovers, fo.Latency)
		}
	}
	// The history records no renewal interval: the reference renews at a third of the TTL.
	ri := h.Meta.LeaseTTL / 3
	f.RenewalIntervalms = ms(ri)
	f.RenewalSource = "TTL/3: the history does not record it"
	if ri <= 0 || h.Meta.Duration <= 0 {
		return
	}
	intervals := float64(h.Meta.Duration) / float64(ri)
	perInst := map[string]int{}
	for _, e := range h.Events {
		if e.Kind == history.KindOp && e.Instance != "" {
			perInst[e.Instance]++
		}
	}
	for in := range h.Meta.Counted { // bookkeeping reads counted rather than recorded
		perInst[in] += int(h.Meta.CountedBy(in))
	}
	for _, n := range perInst {
		f.cmdRates = append(f.cmdRates, float64(n)/intervals)
	}
}

// summarise turns the collected samples into the reported figures.
func (f *benchFigures) summarise() {
	f.Failovers, f.Handoffs = len(f.failovers), len(f.handoffs)
	if len(f.failovers) > 0 {
		f.FailoverP50ms = msp(quantile(f.failovers, 0.50))
		f.FailoverP99ms = msp(quantile(f.failovers, 0.99))
		mx := quantile(f.failovers, 1)
		f.FailoverMaxms = msp(mx)
		if f.LeaseTTLms > 0 {
			r := math.Round(ms(mx)/f.LeaseTTLms*1e4) / 1e4
			f.MaxOverTTL = &r
		}
	}
	if len(f.handoffs) > 0 {
		f.HandoffP50ms = msp(quantile(f.handoffs, 0.50))
		f.HandoffP99ms = msp(quantile(f.handoffs, 0.99))
	}
	if len(f.cmdRates) > 0 {
		sum, mx := 0.0, 0.0
		for _, r := range f.cmdRates {
			sum += r
			mx = math.Max(mx, r)
		}
		mean := math.Round(sum/float64(len(f.cmdRates))*100) / 100
		mx = math.Round(mx*100) / 100
		f.CmdsPerInstPerRI, f.CmdsPerInstPerRIMax = &mean, &mx
	}
}

// quantile is the nearest-rank q-quantile of ds (sorted in place): the smallest sample with at least
// q of all samples at or below it.
func quantile(ds []time.Duration, q float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

func msp(d time.Duration) *float64 {
	v := ms(d)
	return &v
}

// resetPeakRSS resets the kernel's record of this process's peak resident set (VmHWM), so that the next
// reading covers only what follows.
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS reads VmHWM from /proc/self/status and says what it covers.
func peakRSS(reset bool) (int64, string) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, "unavailable: " + err.Error()
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmHWM:") {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "VmHWM:"))
		if len(fields) != 2 || fields[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			break
		}
		src := "VmHWM of this process (/proc/self/status), reset before each scenario"
		if !reset {
			src = "VmHWM of this process (/proc/self/status) since it started: the reset was refused"
		}
		return kb * 1024, src
	}
	return 0, "unavailable: no VmHWM line in /proc/self/status"
}

// printBench prints the figures as a table, with the notes that say how they were measured.
func printBench(w io.Writer, figs []benchFigures) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nscenario\truns\tfailed\tTTL\tfailovers\tfailover p50\tp99\tmax\tmax/TTL\thandoffs\thandoff p50\tp99\tcmds/inst/RI\tpeak RSS\twall/run\truns/CPU-s\tspec-s/wall-s")
	for _, f := range figs {
		ratio, cmds := "-", "-"
		if f.MaxOverTTL != nil {
			ratio = fmt.Sprintf("%.3f", *f.MaxOverTTL)
		}
		if f.CmdsPerInstPerRI != nil {
			cmds = fmt.Sprintf("%.1f", *f.CmdsPerInstPerRI)
		}
		failovers := strconv.Itoa(f.Failovers)
		if f.Unmeasured > 0 {
			failovers += fmt.Sprintf(" (+%d never)", f.Unmeasured)
		}
		perRun := time.Duration(f.WallSeconds / float64(max(f.Runs, 1)) * float64(time.Second))
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.0f\n", f.Scenario, f.Runs, f.Failed,
			fmtMs(&f.LeaseTTLms), failovers, fmtMs(f.FailoverP50ms), fmtMs(f.FailoverP99ms), fmtMs(f.FailoverMaxms), ratio,
			f.Handoffs, fmtMs(f.HandoffP50ms), fmtMs(f.HandoffP99ms), cmds, fmtBytes(f.PeakRSSBytes),
			perRun.Round(time.Millisecond), f.RunsPerCPUSecond, f.SpecPerWall)
	}
	_ = tw.Flush()
	if len(figs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfailover: crash, restart, partition, pause; handoff: graceful stop or voluntary release (fault to first poll by another instance)\n")
	fmt.Fprintf(w, "RI (renewal interval) = %s\n", figs[0].RenewalSource)
	fmt.Fprintf(w, "cmds/inst/RI: each instance's backend commands (recorded, and counted bookkeeping reads) ÷ (run duration ÷ RI), mean over instances and runs\n")
	fmt.Fprintf(w, "peak RSS: %s; a redis-server backend runs in its own process and is not counted\n", figs[0].PeakRSSSrc)
	fmt.Fprintf(w, "wall/run: wall time per run, checking and reports included; runs/CPU-s: runs per second of one core (this process's user and system time; a redis-server's is not counted); spec-s/wall-s: spec time run per wall second\n")
}

func fmtMs(v *float64) string {
	if v == nil {
		return "-"
	}
	d := time.Duration(*v * float64(time.Millisecond))
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func fmtBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
