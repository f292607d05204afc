package simcli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tenurelabs/tenure/reports"
)

// characteristicCells are, for each baseline and peer, the scenarios its known flaw shows in: the cells
// it is in the matrix to fail. It fails plenty of others (imbalance, mostly), which the matrix expects
// too; passing one of these instead means the harness missed the flaw, and fails the matrix.
var characteristicCells = map[string][]string{
	"naive":                {"redis-partition"},                 // no local deadline: a cut-off holder polls on
	"spec-naive":           {"gc-pause"},                        // believes until Redis says otherwise, no fencing
	"getexpire":            {"election-renewal-gap-redis"},      // GET then EXPIRE: a late EXPIRE extends the successor
	"heartbeat-takeover":   {"election-leader-partition-redis"}, // a deposed leader learns of it at its next round
	"pg-advisory":          {"election-conn-reset-pg"},          // never re-checks that its session holds the lock
	"redislock":            {"redis-restart-empty"},             // no guard against a Redis that comes back empty
	"redsync":              {"redis-restart-empty"},
	"redsync-setnx-extend": {"redis-restart-empty"},
	"redlock":              {"gc-pause"}, // a majority survives a node restart, but nothing stops a frozen holder
}

func characteristic(system, scenario string) bool {
	for _, s := range characteristicCells[system] {
		if s == scenario {
			return true
		}
	}
	return false
}

// status is what the cell says: Tenure's own systems must pass; a baseline or peer failing is expected,
// and passing its characteristic cell is not. An inconclusive run (nothing violated, but the harness ran
// too late to judge a timing verdict) is no evidence either way: it is never counted as a pass nor as a
// failure, expected or not. A cell with no failing run and an inconclusive one is inconclusive, whoever
// its system is.
func (c matrixCell) status() reports.MatrixStatus {
	var failed, inconclusive, errored int
	for _, r := range c.runs {
		switch {
		case r.errored:
			errored++
		case r.inconclusive:
			inconclusive++
		case !r.passed:
			failed++
		}
	}
	switch {
	case errored == len(c.runs):
		return reports.MatrixError
	case referenceSystems[c.system] && failed > 0:
		return reports.MatrixUnexpected
	case failed > 0:
		return reports.MatrixExpected // a baseline's failing run shows what it is there to show
	case inconclusive > 0:
		return reports.MatrixInconclusive
	case !referenceSystems[c.system] && characteristic(c.system, c.scenario):
		return reports.MatrixUnexpected
	}
	return reports.MatrixPass
}

// asserted reports whether the matrix expects something of the cell: every cell of a reference system
// (it must pass) and a baseline's characteristic cells (its flaw must show). A baseline's other cells
// may pass or fail alike, so an inconclusive one is shown as such but leaves the verdict as the other
// cells make it.
func (c matrixCell) asserted() bool {
	return referenceSystems[c.system] || characteristic(c.system, c.scenario)
}

// why says what the cell's status means for it.
func (c matrixCell) why() string {
	char := characteristic(c.system, c.scenario)
	switch st := c.status(); {
	case st == reports.MatrixError:
		return "no run of this cell could be set up"
	case st == reports.MatrixUnexpected && referenceSystems[c.system]:
		return c.system + " is Tenure's own and must pass every cell: see the report"
	case st == reports.MatrixUnexpected:
		return c.system + "'s known flaw shows in " + c.scenario + ", but every run passed: the harness missed it"
	case st == reports.MatrixInconclusive && referenceSystems[c.system]:
		return "the harness itself ran too late to judge a timing invariant: run it again on a quieter machine"
	case st == reports.MatrixInconclusive && char:
		return c.system + "'s known flaw shows in " + c.scenario + ", but no run showed it and the harness itself ran too late to judge one: " +
			"neither a pass nor its expected failure; run it again on a quieter machine"
	case st == reports.MatrixInconclusive:
		return "no run of " + c.system + " failed here and the harness itself ran too late to judge one: neither a pass nor an expected " +
			"failure; the matrix expects nothing of this cell, so it leaves the verdict as the other cells make it"
	case st == reports.MatrixExpected && char:
		return c.system + " failed where its known flaw shows: what it is in the matrix for"
	case st == reports.MatrixExpected:
		return c.system + " is a baseline or peer: its failures are the matrix's expected output"
	}
	return "every invariant held on every seed"
}

// gridText is the cell's text in the grid: a characteristic cell that passed says it should not have.
func (c matrixCell) gridText(seeds int) string {
	if c.status() == reports.MatrixUnexpected && !referenceSystems[c.system] {
		return "pass, but expected to fail"
	}
	return c.text(seeds)
}

// matrixModel is the grid reports.WriteMatrix draws; reports are linked relative to prefix.
func matrixModel(cells []matrixCell, seeds int, entries []reports.SuiteEntry, notes []string, prefix string) reports.Matrix {
	m := reports.Matrix{Notes: notes, Runs: entries}
	for g, title := range groupTitles {
		var group []matrixCell
		for _, c := range cells {
			if groupOf(c.scenario) == g {
				group = append(group, c)
			}
		}
		if len(group) > 0 {
			m.Groups = append(m.Groups, reports.MatrixGroup{Title: title, Systems: rowsOf(group), Scenarios: colsOf(group)})
		}
	}
	link := func(dir string) string { return filepath.ToSlash(filepath.Join(prefix, dir, "report.html")) }
	for _, c := range cells {
		mc := reports.MatrixCell{System: c.system, Scenario: c.scenario, Status: c.status(), Text: c.gridText(seeds),
			Characteristic: characteristic(c.system, c.scenario), Unasserted: !c.asserted(), Why: c.why()}
		if d := c.firstFailing(); d != "" {
			mc.Report = link(d)
		} else if len(c.runs) > 0 && !c.runs[0].errored {
			mc.Report = link(c.runs[0].dir)
		}
		m.Cells = append(m.Cells, mc)
		for _, r := range c.runs {
			if r.passed {
				continue
			}
			mr := reports.MatrixRun{System: c.system, Scenario: c.scenario, Seed: r.seed, What: r.what(), Replay: r.replay}
			if !r.errored {
				mr.Report = link(r.dir)
			}
			m.Failing = append(m.Failing, mr)
		}
	}
	return m
}

// matrixCode is the matrix's exit status, from the same cells as its badge: ExitViolated when a cell
// is unexpected (Tenure's system failed, or a baseline passed the cell its flaw shows in), else
// ExitInconclusive when a cell the matrix asserts something of is inconclusive (a reference system's, or
// a baseline's characteristic cell), else ExitOK.
func matrixCode(cells []matrixCell) int {
	switch reports.MatrixVerdict(matrixModel(cells, 1, nil, nil, "").Cells).Class {
	case "violated":
		return ExitViolated
	case "inconclusive":
		return ExitInconclusive
	}
	return ExitOK
}

// matrixPlain is the grid for a terminal: one block per system, one line per scenario, with the
// cell's status when it is not a pass, and the badge last.
func matrixPlain(cells []matrixCell, seeds int) string {
	var b strings.Builder
	cols := colsOf(cells)
	width := 0
	for _, col := range cols {
		width = max(width, len(col))
	}
	at := map[[2]string]matrixCell{}
	for _, c := range cells {
		at[[2]string{c.system, c.scenario}] = c
	}
	for _, r := range rowsOf(cells) {
		b.WriteString(r + "\n")
		for _, col := range cols {
			c, ok := at[[2]string{r, col}]
			if !ok {
				continue
			}
			line := c.gridText(seeds)
			switch c.status() {
			case reports.MatrixExpected:
				line += "  (expected failure"
				if characteristic(c.system, c.scenario) {
					line += ": its known flaw"
				}
				line += ")"
			case reports.MatrixUnexpected:
				line += "  (UNEXPECTED)"
			case reports.MatrixInconclusive:
				switch {
				case referenceSystems[c.system]:
					line += "  (INCONCLUSIVE)"
				case characteristic(c.system, c.scenario):
					line += "  (INCONCLUSIVE: its known flaw neither showed nor could be judged)"
				default:
					line += "  (inconclusive: neither a pass nor an expected failure; the verdict does not depend on it)"
				}
			}
			fmt.Fprintf(&b, "  %-*s  %s\n", width, col, line)
		}
	}
	m := matrixModel(cells, seeds, nil, nil, "")
	v := reports.MatrixVerdict(m.Cells)
	fmt.Fprintf(&b, "\nmatrix %s · %s\n", v.Word, matrixCountsPlain(m.Cells))
	return b.String()
}

// matrixCountsPlain counts the cells by status for the terminal.
func matrixCountsPlain(cells []reports.MatrixCell) string {
	n := map[reports.MatrixStatus]int{}
	for _, c := range cells {
		n[c.Status]++
	}
	return fmt.Sprintf("%d cells: %d pass, %d expected failures, %d unexpected, %d inconclusive, %d errors",
		len(cells), n[reports.MatrixPass], n[reports.MatrixExpected], n[reports.MatrixUnexpected], n[reports.MatrixInconclusive], n[reports.MatrixError])
}
