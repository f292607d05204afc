package simcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/reports"
)

// reportCmd re-checks saved runs and renders their reports again. It acts only on the directory it is
// given, and only when that is a run, a suite, a matrix or a bench that simrun wrote
// (reports.Identify): it never looks for runs below a directory that is not one of those, and a
// collection's runs are those its marker (or, written before markers, its index) names.
func reportCmd(args []string, stdout io.Writer) (int, error) {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return ExitUsage, fmt.Errorf("%w: simrun report DIR (the directory of a run, a suite or a matrix that simrun wrote)", errUsage)
	}
	dir := args[0]
	found, err := reports.Identify(dir)
	if err != nil {
		if errors.Is(err, reports.ErrNotOutput) {
			return ExitUsage, fmt.Errorf("%w: report: %v", errUsage, err)
		}
		return ExitUsage, err
	}
	switch found.Kind {
	case reports.KindRun:
		return reportRun(dir, stdout)
	case reports.KindSuite, reports.KindMatrix, reports.KindBench:
		return reportCollection(dir, found, stdout)
	}
	return ExitUsage, fmt.Errorf("%w: report: %s holds a simrun %s, which report does not render as a whole: give one of its runs (its %s names them)",
		errUsage, dir, found.Kind, reports.FileMarker)
}

// reportRun re-checks the run saved in dir and renders its reports again, leaving history.jsonl as it is.
func reportRun(dir string, stdout io.Writer) (int, error) {
	h, err := readRunHistory(dir)
	if err != nil {
		return ExitUsage, err
	}
	row, _, err := judge(dir, h, true)
	if err != nil {
		return ExitUsage, err
	}
	printSummary(stdout, []summaryRow{row})
	fmt.Fprintf(stdout, "report: %s\n", filepath.Join(dir, reports.FileReport))
	return rowExit(row), nil
}

// readRunHistory reads the history of a run directory, saying so when the run recorded none.
func readRunHistory(dir string) (history.History, error) {
	p := filepath.Join(dir, reports.FileHistory)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return history.History{}, fmt.Errorf("%w: report: %s holds no %s: its run recorded nothing (it was stopped while being set up)",
			errUsage, dir, reports.FileHistory)
	}
	return history.ReadFile(p)
}

// reportCollection re-checks every run a suite, matrix or bench directory names and renders the runs'
// reports and the collection's index (and a matrix's table) again. A run it names that is gone, or
// recorded nothing, is listed as skipped.
func reportCollection(dir string, found reports.Found, stdout io.Writer) (int, error) {
	var rows []summaryRow
	var entries []reports.SuiteEntry
	var skipped []string
	suite := ""
	for _, rel := range found.Runs {
		sub := filepath.Join(dir, filepath.FromSlash(rel))
		f, err := reports.Identify(sub)
		if err == nil && f.Kind != reports.KindRun {
			err = fmt.Errorf("it holds a %s, not a run", f.Kind)
		}
		if err == nil {
			if _, serr := os.Stat(filepath.Join(sub, reports.FileHistory)); serr != nil {
				err = errors.New("it recorded nothing")
			}
		}
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", rel, err))
			continue
		}
		h, err := history.ReadFile(filepath.Join(sub, reports.FileHistory))
		if err != nil {
			return ExitUsage, err
		}
		row, entry, err := judge(sub, h, true)
		if err != nil {
			return ExitUsage, err
		}
		entry.Dir = rel
		if suite == "" {
			suite = h.Meta.Suite
		}
		rows = append(rows, row)
		entries = append(entries, entry)
	}
	if len(rows) == 0 {
		return ExitUsage, fmt.Errorf("%w: report: %s is a simrun %s, but none of the %d runs it names could be re-checked: %s",
			errUsage, dir, found.Kind, len(found.Runs), strings.Join(skipped, "; "))
	}
	if found.Legacy {
		// Written before markers: mark it now, with the runs its index named.
		if err := reports.WriteMarker(dir, reports.Marker{Kind: found.Kind, Runs: found.Runs}); err != nil {
			return ExitUsage, err
		}
	}
	if suite == "" || found.Kind != reports.KindSuite {
		suite = string(found.Kind)
	}
	code := ExitOK
	if found.Kind == reports.KindMatrix {
		cells, seeds := cellsOf(entries, rows)
		if err := writeMatrix(dir, matrixModel(cells, seeds, entries, nil, "")); err != nil {
			return ExitUsage, err
		}
		fmt.Fprint(stdout, "\n"+matrixPlain(cells, seeds))
		fmt.Fprint(stdout, failingRuns(cells, dir))
		code = matrixCode(cells)
		fmt.Fprintf(stdout, "matrix: %s\n", filepath.Join(dir, fileMatrix))
	} else {
		if err := reports.WriteSuite(dir, suite, entries); err != nil {
			return ExitUsage, fmt.Errorf("write the index: %w", err)
		}
		printSummary(stdout, rows)
		for _, r := range rows {
			code = worseExit(code, rowExit(r))
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(stdout, "skipped %s\n", s)
	}
	fmt.Fprintf(stdout, "index: %s\n", filepath.Join(dir, reports.FileIndex))
	return code, nil
}

// cellsOf rebuilds a matrix's cells from its runs, in the order its marker names them; seeds is the
// most runs of one cell.
func cellsOf(entries []reports.SuiteEntry, rows []summaryRow) ([]matrixCell, int) {
	var cells []matrixCell
	at := map[[2]string]int{}
	cols := map[string]int{}
	seeds := 1
	for i, e := range entries {
		key := [2]string{e.Meta.System, e.Meta.Scenario}
		k, ok := at[key]
		if !ok {
			if _, seen := cols[e.Meta.Scenario]; !seen {
				cols[e.Meta.Scenario] = len(cols)
			}
			k = len(cells)
			at[key] = k
			cells = append(cells, matrixCell{system: e.Meta.System, scenario: e.Meta.Scenario, order: cols[e.Meta.Scenario]})
		}
		cells[k].runs = append(cells[k].runs, matrixRun{seed: e.Meta.Seed, dir: filepath.ToSlash(e.Dir), replay: e.Meta.Command,
			passed: e.Passed, inconclusive: rows[i].inconclusive, words: violatedWords(rows[i].outcomes)})
		seeds = max(seeds, len(cells[k].runs))
	}
	return cells, seeds
}
