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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/reports"
)

const exploreHelp = `Usage: simrun explore [flags]

The seed explorer: runs the composing nemesis (the explore scenario, or explore-election-redis for an
election system) on one seed after another, drawn from --explore-seed, until --seeds runs, --for of wall
time, or with --first the first run that does not pass. In virtual time (--virtual) it uses a worker
process per core and runs at spec timing, tens of seeds a second; in real time, one seed at a time.

It keeps the whole directory of every run that did not pass, with its replay line, and nothing of the
runs that passed; it prints (and writes into summary.md) how many seeds it explored, how fast, and for
each failure its seed, the invariants it broke, and when it was found (runs and wall seconds from the
start): the figure a mutant's "time to find" is measured by.

Exit status: 0 every run passed, 1 a run did not pass, 2 usage or setup error, 130 interrupted.

Flags:
`

type exploreFlags struct {
	campaign    campaignFlags
	scenario    string
	exploreSeed int64
	budget      time.Duration
	first       bool
	maxSeeds    int
}

func exploreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var f exploreFlags
	fs := flag.NewFlagSet("simrun explore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var common flag.FlagSet
	f.campaign.run.registerCommon(&common)
	common.VisitAll(func(fl *flag.Flag) {
		switch fl.Name {
		case "seed", "instances", "endpoints":
		default:
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
	fs.StringVar(&f.scenario, "scenario", "", "the scenario to explore (default: explore for a lease system, explore-election-redis for an election system)")
	fs.Func("seeds", "explore at most this many seeds (default 1000, or 100000 with --for)", positiveInt(&f.maxSeeds))
	fs.DurationVar(&f.budget, "for", 0, "explore for this long (wall time), then stop")
	fs.BoolVar(&f.first, "first", false, "stop at the first run that does not pass")
	fs.Func("explore-seed", "the seed the seeds are drawn from (default: drawn from the clock and printed)", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want a decimal integer, got %q", s)
		}
		f.exploreSeed = n
		return nil
	})
	fs.StringVar(&f.campaign.run.out, "out", "", "output directory, new or empty (default ./simrun-out/<time>-explore-<seed>)")
	fs.IntVar(&f.campaign.run.parallel, "parallel", 0, "runs at once (default: a worker process per core in virtual time, else 1)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, exploreHelp)
			printFlags(stdout, fs)
			return ExitOK, err
		}
		return ExitUsage, flagError("explore", fs, err)
	}
	if len(pos) > 0 {
		return ExitUsage, fmt.Errorf("%w: simrun explore takes no scenario names (got %q): give --scenario", errUsage, strings.Join(pos, " "))
	}
	f.campaign.run.visit(fs)
	set := f.campaign.run.set
	if !set["explore-seed"] {
		f.exploreSeed = time.Now().UnixNano() % 1_000_000_000
	}
	if f.maxSeeds == 0 {
		f.maxSeeds = 1000
		if f.budget > 0 {
			f.maxSeeds = maxCampaignSeeds
		}
	}
	if f.budget < 0 {
		return ExitUsage, fmt.Errorf("%w: --for must be positive (got %s)", errUsage, f.budget)
	}
	if f.scenario == "" {
		chosen, err := f.campaign.run.chooseSystem()
		if err != nil {
			return ExitUsage, err
		}
		f.scenario = "explore"
		if kindOf(chosen) == "election" {
			f.scenario = "explore-election-redis"
		}
	}
	// The explorer is a campaign of one scenario, whose jobs it hands out one by one.
	cargs := []string{f.scenario, "--seeds", strconv.Itoa(f.maxSeeds), "--campaign-seed", strconv.FormatInt(f.exploreSeed, 10)}
	for _, name := range []string{"system", "exec", "kind", "redis", "toxiproxy", "postgres", "time-scale"} {
		if set[name] {
			cargs = append(cargs, "--"+name, fs.Lookup(name).Value.String())
		}
	}
	if f.campaign.run.virtual {
		cargs = append(cargs, "--virtual")
	}
	lc, err := newLazyCampaign(cargs)
	if err != nil {
		return ExitUsage, err
	}
	cf := &lc.f
	first, err := lc.job(0)
	if err != nil {
		return ExitUsage, err
	}
	if cf.run.virtual {
		cf.run.parallel = runtime.NumCPU()
	} else {
		cf.run.parallel = 1
	}
	parallel := cf.run.parallel
	if set["parallel"] {
		if f.campaign.run.parallel < 1 {
			return ExitUsage, fmt.Errorf("%w: --parallel must be at least 1 (got %d)", errUsage, f.campaign.run.parallel)
		}
		parallel = f.campaign.run.parallel
	}
	base := f.campaign.run.out
	if base == "" {
		base = filepath.Join("simrun-out", fmt.Sprintf("%s-explore-%d", time.Now().Format("20060102-150405"), f.exploreSeed))
	}
	if err := reports.CheckOut(base, reports.KindCampaign); err != nil {
		return ExitUsage, outDirError("--out", err)
	}
	if entries, err := os.ReadDir(base); err == nil && len(entries) > 0 {
		return ExitUsage, fmt.Errorf("%w: --out %s already holds files: give a new or empty directory", errUsage, base)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return ExitUsage, err
	}
	if err := reports.WriteMarker(base, reports.Marker{Kind: reports.KindCampaign}); err != nil {
		return ExitUsage, err
	}
	mode := "real time"
	if cf.run.virtual {
		mode = "virtual time"
	}
	fmt.Fprintf(stdout, "exploring %s (system %s, %s, time scale %g) from explore seed %d: up to %d seeds", f.scenario, first.opts.System.Name(), mode, cf.run.timeScale, f.exploreSeed, lc.len())
	if f.budget > 0 {
		fmt.Fprintf(stdout, " or %s", f.budget)
	}
	fmt.Fprintf(stdout, ", %d at a time, into %s\n", parallel, base)

	workerArgs := cargs
	workers := make([]*worker, parallel)
	for w := range workers {
		workers[w] = &worker{args: workerArgs}
	}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	started := time.Now()
	var mu sync.Mutex
	var found []exploreFinding
	ran, errored := 0, 0
	stop := false
	order := make([]int, lc.len())
	for i := range order {
		order[i] = i
	}
	runPool(ctx, parallel, order, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return stop || (f.budget > 0 && time.Since(started) >= f.budget)
	}, func(w, k int) {
		mu.Lock()
		j, jerr := lc.job(k)
		mu.Unlock()
		if jerr != nil {
			mu.Lock()
			ran++
			errored++
			fmt.Fprintf(stdout, "ERROR job %d: %v\n", k, jerr)
			stop = true
			mu.Unlock()
			return
		}
		j.dir = runDir(base, j.opts.Scenario.Name, j.opts.Seed)
		var err error
		var judged time.Time
		if cf.run.virtual {
			var rep workerReply
			if rep, err = workers[w].run(k, j.dir); err == nil && rep.Err != "" {
				err = errors.New(rep.Err)
			}
			if rep.Judged != 0 {
				judged = time.Unix(0, rep.Judged)
			}
		} else {
			var row summaryRow
			row, _, err = runOne(ctx, j, true, io.Discard, stderr)
			judged = row.judged
		}
		var fd *exploreFinding
		if err == nil {
			res, rerr := reports.ReadResult(j.dir)
			switch {
			case rerr != nil:
				err = rerr
			case res.Passed:
				_ = os.RemoveAll(j.dir)
			default:
				fd = &exploreFinding{Seed: j.opts.Seed, Causes: causesOf(res), Replay: j.opts.Command, Dir: j.dir}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		ran++
		if err != nil && ctx.Err() == nil {
			errored++
			fmt.Fprintf(stdout, "ERROR seed %d: %v\n", j.opts.Seed, err)
			if f.first {
				stop = true
			}
			return
		}
		if fd != nil {
			fd.Runs, fd.After = ran, time.Since(started)
			if !judged.IsZero() && judged.After(started) {
				fd.After = judged.Sub(started) // when its verdict was known, before its reports were written
			}
			found = append(found, *fd)
			fmt.Fprintf(stdout, "FOUND seed %d after %d runs, %s: %s\n  replay: %s\n", fd.Seed, fd.Runs, fd.After.Round(100*time.Millisecond), strings.Join(fd.Causes, "; "), fd.Replay)
			if f.first {
				stop = true
			}
		}
	})
	wall := time.Since(started)
	summary := exploreSummary(f.scenario, first.opts.System.Name(), mode, f.exploreSeed, ran, errored, wall, found)
	fmt.Fprint(stdout, summary)
	if err := os.WriteFile(filepath.Join(base, reports.FileSummary), []byte(summary), 0o644); err != nil {
		return ExitUsage, err
	}
	switch {
	case ctx.Err() != nil:
		return ExitInterrupted, fmt.Errorf("interrupted after %d runs", ran)
	case errored > 0:
		return ExitUsage, fmt.Errorf("%d runs could not be set up", errored)
	case len(found) > 0:
		return ExitViolated, nil
	}
	return ExitOK, nil
}

// exploreFinding is one run of the explorer that did not pass.
type exploreFinding struct {
	Seed   int64
	Causes []string
	Replay string
	Dir    string
	Runs   int           // runs finished when it was found, itself included
	After  time.Duration // wall time from the start to it
}

func exploreSummary(scenario, system, mode string, seed int64, ran, errored int, wall time.Duration, found []exploreFinding) string {
	var b strings.Builder
	rate := float64(ran) / max(wall.Seconds(), 1e-9)
	fmt.Fprintf(&b, "explored %s (system %s, %s) from explore seed %d: %d runs in %s (%.1f runs/s), %d did not pass, %d could not be set up\n",
		scenario, system, mode, seed, ran, wall.Round(100*time.Millisecond), rate, len(found), errored)
	if len(found) > 0 {
		fd := found[0]
		fmt.Fprintf(&b, "first found: seed %d, after %d runs and %s\n", fd.Seed, fd.Runs, fd.After.Round(100*time.Millisecond))
		for _, fd := range found {
			fmt.Fprintf(&b, "- seed %d (run %d, %s): %s\n  %s\n", fd.Seed, fd.Runs, fd.After.Round(100*time.Millisecond), strings.Join(fd.Causes, "; "), fd.Replay)
		}
	}
	return b.String()
}
