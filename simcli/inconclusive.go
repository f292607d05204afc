package simcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tenurelabs/tenure/reports"
)

// A run is inconclusive when nothing was violated but a timing verdict coincided with the harness's own
// lag (checker.LagThreshold): on an oversubscribed machine the harness cannot tell the system's
// lateness from its own. Such a run is no evidence either way, so it neither passes (exit 0) nor fails
// (exit 1): it exits 3. A run again on the same seed gets evidence, since the load that starved it is
// rarely there for the same few hundred milliseconds twice; --rerun-inconclusive does that, and keeps
// every inconclusive attempt beside the verdict that replaced it.

// rowExit is a finished run's exit code: 0 passed, 3 inconclusive, 1 anything else that did not pass.
func rowExit(r summaryRow) int {
	switch {
	case r.passed:
		return ExitOK
	case r.inconclusive:
		return ExitInconclusive
	}
	return ExitViolated
}

// worseExit combines the exit codes of two runs: a failure outweighs an inconclusive run, which
// outweighs a pass.
func worseExit(a, b int) int {
	rank := func(c int) int {
		switch c {
		case ExitOK:
			return 0
		case ExitInconclusive:
			return 1
		}
		return 2
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// runWithReruns runs a job and, while it is inconclusive, runs it again with the same seed, at most
// reruns more times. Each inconclusive attempt's directory ends up inside the final one, as
// inconclusive-1, inconclusive-2, ... (it stays beside it, DIR.inconclusive-N, if the final attempt left
// no directory); the suite's index links the final attempt.
func runWithReruns(ctx context.Context, j job, reruns int, quiet bool, stdout, stderr io.Writer) (summaryRow, reports.SuiteEntry, error) {
	row, entry, err := runOne(ctx, j, quiet, stdout, stderr)
	var aside []string
	for attempt := 1; attempt <= reruns && err == nil && row.inconclusive && ctx.Err() == nil; attempt++ {
		dir := fmt.Sprintf("%s.inconclusive-%d", j.dir, attempt)
		if rerr := os.Rename(j.dir, dir); rerr != nil {
			return row, entry, fmt.Errorf("%s: keep the inconclusive attempt before running it again: %w", j.opts.Scenario.Name, rerr)
		}
		aside = append(aside, dir)
		fmt.Fprintf(stdout, "  re-running %s with the same seed (%d of at most %d): the harness ran too late to judge it\n",
			j.opts.Scenario.Name, attempt, reruns)
		row, entry, err = runOne(ctx, j, quiet, stdout, stderr)
	}
	for i, dir := range aside {
		_ = os.Rename(dir, filepath.Join(j.dir, fmt.Sprintf("inconclusive-%d", i+1)))
	}
	if len(aside) > 0 && err == nil {
		row.detail += fmt.Sprintf(" (after %d inconclusive %s, kept in %s)", len(aside),
			map[bool]string{true: "attempt", false: "attempts"}[len(aside) == 1], filepath.Join(j.dir, "inconclusive-N"))
	}
	return row, entry, err
}
