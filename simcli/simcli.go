// Package simcli is the simrun command line as a library. cmd/simrun is a two-line main around it; a
// team that wants to put its own lease implementation through Tenure's scenarios writes the same two
// lines after registering its system:
//
//	func main() {
//		sim.Register("mine", func() sim.System { return mySystem{} })
//		os.Exit(simcli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
//	}
//
// Exit codes: 0 every invariant held, 1 an invariant was violated (or could not be decided), 2 usage or
// setup error, 3 inconclusive (no violation, but a timing verdict coincided with the harness's own lag:
// the machine was too loaded to judge), 130 interrupted. 'simrun matrix' compares systems, so for it 0 means the matrix completed
// and 1 that a reference system (reference, election-redis, election-postgres) failed a cell.
package simcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	// The reference systems (reference, election-redis, election-postgres, and their hidden mutants in
	// a simrun built with the tenure_mutants tag): the command's defaults, the systems scenarios are
	// written for and the matrix's yardstick.
	_ "github.com/tenurelabs/tenure/systems/reference"
)

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

// Exit codes.
const (
	ExitOK       = 0
	ExitViolated = 1
	ExitUsage    = 2
	// ExitInconclusive: nothing was violated, but a timing verdict coincided with the harness's own lag
	// above the checker's threshold (checker.LagThreshold), so the run is evidence neither way.
	ExitInconclusive = 3
	ExitInterrupted  = 130
)

// errUsage marks errors that are the caller's to fix.
var errUsage = errors.New("usage")

const usage = `simrun — put a lease or election implementation through faults against a real Redis and check it.

Usage:
  simrun list                           scenarios, suites and systems
  simrun run SCENARIO... [flags]        run scenarios
  simrun run --suite NAME [flags]       run a suite (simrun list shows them)
  simrun report DIR                     re-check a run, suite or matrix simrun wrote and render its reports again
  simrun bench SCENARIO... [flags]      failover, handoff, command-rate and memory figures over several seeds
  simrun matrix [flags]                 every system × every scenario of its kind on fixed seeds: a table of verdicts
  simrun campaign SCENARIO... [flags]   scenarios (or a --suite) on many random seeds, splittable with --shard i/n
  simrun campaign merge OUT SHARD...    join the shards of a campaign into one index, JUnit file and summary
  simrun explore [flags]                the seed explorer: the composing nemesis on seed after seed (--virtual: tens a second)
  simrun replay DIR [flags]             a run's seed again: re-runs in virtual time (how often it comes back) and in real time
  simrun bounds [flags]                 the deadlines the checker's model derives for canonical faults, as a table

Each command's --help (simrun run --help, simrun matrix --help, ...) gives its flags.
Exit status: 0 all invariants held, 1 an invariant was violated or undecided, 2 usage or setup error,
3 inconclusive (nothing violated, but the harness ran too late to judge a timing verdict), 130 interrupted
(matrix: 0 completed, 1 a reference system failed a cell).
`

// errText is an error as Main prints it: without the usage mark, and with each line said once (a fleet
// whose every instance fails alike joins the same error once per instance).
func errText(err error) string {
	var kept []string
	for _, line := range strings.Split(strings.TrimPrefix(err.Error(), errUsage.Error()+": "), "\n") {
		said := false
		for _, k := range kept {
			if k == line || strings.HasSuffix(k, ": "+line) {
				said = true
				break
			}
		}
		if !said {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

// Main runs the command line and returns the exit code. SIGINT and SIGTERM stop a run cleanly: faults are
// ended, every child process killed, the partial history saved. Main is meant to be the process's main:
// it silences go-redis's process-wide logger (redis.SetLogger), whose pool lines would repeat what the
// run reports once.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// go-redis logs pool and connection trouble to the process's standard error; a run's failures are
	// reported by the run, once.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the default handling comes back: a second Ctrl-C ends simrun at once
	// (its children still die with it: Pdeathsig).
	go func() {
		<-ctx.Done()
		stop()
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	if len(args) == 2 && args[0] == "help" {
		args = []string{args[1], "--help"} // simrun help run: that command's own help
	}
	var code int
	var err error
	switch args[0] {
	case "list":
		switch {
		case isHelp(args[1:]):
			fmt.Fprint(stdout, listHelp)
			return ExitOK
		case len(args) > 1:
			code, err = ExitUsage, fmt.Errorf("%w: simrun list takes no arguments (got %q)", errUsage, strings.Join(args[1:], " "))
		default:
			code, err = ExitOK, list(stdout)
		}
	case "run":
		code, err = runCmd(ctx, args[1:], stdout, stderr)
	case "report":
		if isHelp(args[1:]) {
			fmt.Fprint(stdout, reportHelp)
			return ExitOK
		}
		code, err = reportCmd(args[1:], stdout)
	case "bench":
		code, err = benchCmd(ctx, args[1:], stdout, stderr)
	case "matrix":
		code, err = matrixCmd(ctx, args[1:], stdout, stderr)
	case "campaign":
		code, err = campaignCmd(ctx, args[1:], stdout, stderr)
	case "explore":
		code, err = exploreCmd(ctx, args[1:], stdout, stderr)
	case "replay":
		code, err = replayCmd(ctx, args[1:], stdout, stderr)
	case "bounds":
		code, err = boundsCmd(args[1:], stdout)
	case virtualWorkerCmd:
		code, err = virtualWorkerMain(ctx, args[1:], os.Stdin, stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	default:
		hint := ""
		if s := suggest(args[0], []string{"list", "run", "report", "bench", "matrix", "campaign", "explore", "replay", "bounds"}); s != "" {
			hint = ": did you mean " + s + "?"
		}
		err = fmt.Errorf("%w: unknown command %q%s (want list, run, report, bench, matrix, campaign, explore, replay or bounds; simrun --help says more)", errUsage, args[0], hint)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintf(stderr, "simrun: %s\n", errText(err))
		if code == ExitOK || code == ExitViolated {
			code = ExitUsage
		}
		if ctx.Err() != nil {
			code = ExitInterrupted
		}
	}
	return code
}
