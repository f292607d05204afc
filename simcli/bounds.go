package simcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

const boundsHelp = `simrun bounds [flags]: the deadlines the checker's model derives, printed as a table.

No table judges a run: every deadline comes from the checker's one model of the history (docs/checker.md).
This prints what that model concludes for canonical histories — a holder that renews and heartbeats at
its intervals, a member that can take over, one fault just after a renewal — at a system's timing and a
time scale, counted from the fault. docs/bounds.md shows it at the specification's timing.

Flags:
`

// boundsCmd prints checker.BoundTable for a system's timing at a time scale.
func boundsCmd(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("simrun bounds", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	scale := 1.0
	system := "reference"
	fs.Func("time-scale", "multiply every spec duration (default 1: the specification's timing)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return fmt.Errorf("want a number above 0, got %q", s)
		}
		scale = v
		return nil
	})
	fs.StringVar(&system, "system", system, "the system whose timing is used")
	fs.Usage = func() { fmt.Fprint(stdout, boundsHelp); printFlags(stdout, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return ExitOK, nil
		}
		return ExitUsage, fmt.Errorf("%w: simrun bounds: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return ExitUsage, fmt.Errorf("%w: simrun bounds takes no arguments (got %q)", errUsage, fs.Args())
	}
	sys, err := sim.Lookup(system)
	if err != nil {
		return ExitUsage, fmt.Errorf("%w: --system: %v", errUsage, err)
	}
	sc, err := scenarios.Get("crash-failover")
	if err != nil {
		return ExitUsage, err
	}
	_, timing, err := sim.Plan(sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: scale})
	if err != nil {
		return ExitUsage, err
	}
	fmt.Fprintf(stdout, "system %s at time scale %g: lease TTL %v, renewal %v, heartbeat %v (lasting %v), discovery %v, call bound %v, poll %v every %v\n\n",
		system, scale, timing.LeaseTTL, timing.RenewInterval, timing.HeartbeatInterval, timing.HeartbeatTTL, timing.DiscoveryInterval,
		timing.OpTimeout, timing.PollDuration, timing.PollInterval)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EFFECT\tSITUATION\tDEADLINE AFTER THE FAULT")
	for _, r := range checker.BoundTable(sim.MetaFor(sys, timing)) {
		fmt.Fprintf(tw, "%s\t%s\t%v\n", r.Effect, r.Situation, r.After.Round(time.Millisecond))
	}
	return ExitOK, tw.Flush()
}
