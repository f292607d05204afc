package simcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/reports"
)

const replayHelp = `Usage: simrun replay DIR [flags]

Confirms a run's finding the other way round: DIR is a run simrun wrote (a failing run of a virtual
campaign or of the explorer, typically). replay runs its scenario, system and seed again
  - --runs times in virtual time, and reports how often the verdict came again (a seed fixes the
    fault schedule, not the interleaving of goroutines, so a virtual finding reproduces at a rate);
  - --real-runs times in real time, against a private redis-server through toxiproxy, on the same
    schedule (it is drawn from the seed; DIR's schedule.txt has it, and each replay writes its own);
and prints every verdict side by side with the original's. A finding that the real runs show is a
defect of the system; one they never show is a fidelity gap of the virtual Redis until explained.

Exit status: 0 the real runs agree with DIR's verdict, 1 they do not, 2 usage or setup error,
130 interrupted.

Flags:
`

type replayFlags struct {
	runs, realRuns int
	timeScale      float64
	redis, out     string
	set            map[string]bool
}

func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var f replayFlags
	fs := flag.NewFlagSet("simrun replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.IntVar(&f.runs, "runs", 10, "re-runs in virtual time, for the reproduction rate (0: none)")
	fs.IntVar(&f.realRuns, "real-runs", 1, "runs in real time against redis-server (0: none)")
	fs.Float64Var(&f.timeScale, "time-scale", 0, "time scale of the real runs (default: DIR's)")
	fs.StringVar(&f.redis, "redis", "server", "the real backend (a deploy spec, as simrun run --redis)")
	fs.StringVar(&f.out, "out", "", "where the replays go (default DIR/replay-<time>)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, replayHelp)
			printFlags(stdout, fs)
			return ExitOK, err
		}
		return ExitUsage, flagError("replay", fs, err)
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if len(pos) != 1 {
		return ExitUsage, fmt.Errorf("%w: give one run directory (got %d arguments)", errUsage, len(pos))
	}
	if f.runs < 0 || f.realRuns < 0 || f.runs+f.realRuns == 0 {
		return ExitUsage, fmt.Errorf("%w: --runs and --real-runs are counts of at least 0, and one must be positive", errUsage)
	}
	if f.set["time-scale"] && f.timeScale <= 0 {
		return ExitUsage, fmt.Errorf("%w: --time-scale must be > 0 (got %g)", errUsage, f.timeScale)
	}
	dir := pos[0]
	orig, err := reports.ReadResult(dir)
	if err != nil {
		return ExitUsage, fmt.Errorf("%w: %s is not a run simrun wrote (no readable result.json): %v", errUsage, dir, err)
	}
	m := orig.Meta
	if m.Scenario == "" || m.System == "" {
		return ExitUsage, fmt.Errorf("%w: %s names no scenario or system", errUsage, dir)
	}
	out := f.out
	if out == "" {
		out = filepath.Join(dir, "replay-"+time.Now().Format("20060102-150405"))
	}
	if err := reports.CheckOut(out, reports.KindSuite); err != nil {
		return ExitUsage, outDirError("--out", err)
	}
	// One run of the scenario, as 'simrun run' plans it, in either mode.
	planOne := func(virtual bool, scale float64, k int) (job, error) {
		var rf runFlags
		rf.set = map[string]bool{"system": true, "seed": true, "time-scale": true}
		rf.system, rf.systemSet = m.System, true
		rf.seed, rf.seedSet = m.Seed, true
		rf.timeScale, rf.timeScaleSet = scale, true
		rf.instances, rf.endpoints = m.Instances, m.Endpoints
		rf.virtual = virtual
		rf.redis = "auto"
		if !virtual {
			rf.redis = f.redis
			rf.set["redis"] = true
		}
		js, _, err := plan(&rf, []string{m.Scenario})
		if err != nil {
			return job{}, err
		}
		j := js[0]
		mode := "real"
		if virtual {
			mode = "virtual"
		}
		j.dir = filepath.Join(out, fmt.Sprintf("%s-%d", mode, k+1))
		return j, nil
	}
	realScale := m.TimeScale
	if f.set["time-scale"] {
		realScale = f.timeScale
	}
	origWord := replayVerdict(orig)
	fmt.Fprintf(stdout, "replaying %s: %s, system %s, seed %d, %s at time scale %g: %s\n", dir, m.Scenario, m.System, m.Seed,
		modeWord(m.Virtual), m.TimeScale, origWord)
	type outcome struct {
		mode, word, dir string
	}
	var virt, real []outcome
	for k := 0; k < f.runs+f.realRuns && ctx.Err() == nil; k++ {
		virtual := k < f.runs
		scale, idx := m.TimeScale, k
		if !virtual {
			scale, idx = realScale, k-f.runs
		}
		j, err := planOne(virtual, scale, idx)
		if err != nil {
			return ExitUsage, err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return ExitUsage, err
		}
		_, _, rerr := runOne(ctx, j, true, io.Discard, stderr)
		o := outcome{mode: modeWord(virtual), dir: j.dir}
		if rerr != nil {
			o.word = "ERROR: " + rerr.Error()
		} else if res, err := reports.ReadResult(j.dir); err != nil {
			o.word = "ERROR: " + err.Error()
		} else {
			o.word = replayVerdict(res)
		}
		fmt.Fprintf(stdout, "  %-12s %s  (%s)\n", o.mode+fmt.Sprintf(" #%d", idx+1), o.word, j.dir)
		if virtual {
			virt = append(virt, o)
		} else {
			real = append(real, o)
		}
	}
	same := func(os []outcome) int {
		n := 0
		for _, o := range os {
			if o.word == origWord {
				n++
			}
		}
		return n
	}
	fmt.Fprintf(stdout, "\n%-28s %s\n", "original ("+modeWord(m.Virtual)+")", origWord)
	if len(virt) > 0 {
		fmt.Fprintf(stdout, "%-28s %d of %d (%.0f%%)\n", "virtual re-runs alike", same(virt), len(virt), 100*float64(same(virt))/float64(len(virt)))
	}
	if len(real) > 0 {
		fmt.Fprintf(stdout, "%-28s %d of %d (time scale %g, --redis %s)\n", "real runs alike", same(real), len(real), realScale, f.redis)
	}
	if ctx.Err() != nil {
		return ExitInterrupted, ctx.Err()
	}
	if len(real) > 0 && same(real) == 0 {
		fmt.Fprintf(stdout, "not confirmed in real time: a flaky finding, or a fidelity gap of the virtual Redis until explained\n")
		return ExitViolated, nil
	}
	if len(real) > 0 {
		fmt.Fprintf(stdout, "confirmed in real time\n")
	}
	return ExitOK, nil
}

func modeWord(virtual bool) string {
	if virtual {
		return "virtual"
	}
	return "real"
}

// replayVerdict is a run's verdict with the invariants behind it: "PASSED", or "FAILED (single-holder,
// validity)".
func replayVerdict(res reports.RunResult) string {
	switch {
	case res.Interrupted:
		return "INTERRUPTED"
	case res.Passed:
		return "PASSED"
	case res.Inconclusive:
		return "INCONCLUSIVE"
	}
	var bad []string
	for _, inv := range res.Invariants {
		if !inv.OK {
			bad = append(bad, inv.Invariant)
		}
	}
	return "FAILED (" + strings.Join(bad, ", ") + ")"
}
