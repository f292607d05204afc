package simcli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/reports"
)

// A matrix's verdicts, one line per run, are what 'simrun matrix compare' reads: a real matrix and a
// virtual one over the same cells are compared cell by cell, and a recorded real matrix (a verdicts file
// kept in a repository) stands in for the real side where running it again would take an hour.

const compareUsage = `simrun matrix compare REAL VIRTUAL: do virtual time and real time reach the same verdicts?

REAL and VIRTUAL are each a matrix's output directory (simrun matrix --out DIR, and simrun matrix
--virtual --out DIR over the same cells, at the same time scale) or a verdicts file (a matrix's
verdicts.tsv, kept where running the real matrix again would take too long). Every cell both sides ran
is compared by what its runs showed, whatever the seeds:

  agree     both sides saw the same outcomes: every run passed on both, every run failed on both, or
            each side saw both a pass and a failure
  rate      one side saw both outcomes and the other only one of them (a rare outcome missed by a few
            runs: the verdicts overlap)
  DISAGREE  one side always passed and the other always failed: virtual time and real time judge the
            cell differently (a fidelity gap of the virtual Redis or links, or a harness defect)
  unjudged  one side has no judged run of the cell (every run inconclusive or errored)
  uncovered virtual time ran the cell and the real side has no verdict for it (a cell added since the
            real side was measured: measure it)

Cells only the real side ran (the PostgreSQL, Sentinel and Cluster ones, which virtual time refuses) are
counted, not compared. A reference system's failure on either side is reported with the cell.

Exit status: 0 every compared cell agrees or differs by rate, 1 a cell disagrees or a reference system
failed, 3 none of those but a cell is unjudged or uncovered, 2 a usage error.

simrun matrix verdicts DIR prints a matrix directory's verdicts in the file format compare reads.
`

// fileVerdicts is the matrix's verdicts, one line per run.
const fileVerdicts = reports.FileVerdicts

// runVerdict is one run of a matrix as compare reads it.
type runVerdict struct {
	system, scenario string
	seed             int64
	outcome          outcome // a campaign's: pass, fail, inconclusive, error (or interrupted, from result.json)
	words            []string
}

// verdictsOf lists a matrix's runs for its verdicts file.
func verdictsOf(cells []matrixCell) []runVerdict {
	var out []runVerdict
	for _, c := range cells {
		for _, r := range c.runs {
			v := runVerdict{system: c.system, scenario: c.scenario, seed: r.seed, words: r.words, outcome: outFail}
			switch {
			case r.errored:
				v.outcome = outError
			case r.passed:
				v.outcome = outPass
			case r.inconclusive:
				v.outcome = outInconclusive
			}
			out = append(out, v)
		}
	}
	return out
}

// writeVerdicts writes a verdicts file: a header of '#' lines (what the matrix was), then one
// tab-separated line per run: system, scenario, seed, outcome, and the cell words of what it violated
// ("-" for none).
func writeVerdicts(w io.Writer, header []string, runs []runVerdict) error {
	bw := bufio.NewWriter(w)
	for _, h := range header {
		fmt.Fprintf(bw, "# %s\n", h)
	}
	fmt.Fprintln(bw, "# system\tscenario\tseed\toutcome\tinvariants")
	for _, r := range runs {
		words := strings.Join(r.words, " ")
		if words == "" {
			words = "-"
		}
		fmt.Fprintf(bw, "%s\t%s\t%d\t%s\t%s\n", r.system, r.scenario, r.seed, r.outcome, words)
	}
	return bw.Flush()
}

// writeVerdictsFile writes a verdicts file at path.
func writeVerdictsFile(path string, header []string, runs []runVerdict) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write verdicts: %w", err)
	}
	err = writeVerdicts(f, header, runs)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write verdicts: %w", err)
	}
	return nil
}

// verdictsHeader says what a matrix was, for its verdicts file.
func verdictsHeader(f matrixFlags) []string {
	mode := "real time, backend " + f.run.backend
	if f.run.virtual {
		mode = "virtual time"
	}
	return []string{"simrun matrix verdicts", fmt.Sprintf("%s, time scale %g, seeds %d..%d", mode, f.run.timeScale, f.run.seed, f.run.seed+int64(f.seeds)-1)}
}

// loadVerdicts reads a verdicts file, a matrix directory's verdicts.tsv, or, for a matrix directory
// without one, its runs' result.json files.
func loadVerdicts(path string) ([]runVerdict, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is neither a matrix's directory nor a verdicts file: %v", errUsage, path, err)
	}
	if !st.IsDir() {
		return parseVerdictsFile(path)
	}
	if _, err := os.Stat(filepath.Join(path, fileVerdicts)); err == nil {
		return parseVerdictsFile(filepath.Join(path, fileVerdicts))
	}
	var runs []runVerdict
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != reports.FileResult {
			return err
		}
		res, err := reports.ReadResult(filepath.Dir(p))
		if err != nil {
			return err
		}
		if res.Suite != "matrix" {
			return nil
		}
		outcomes := map[string]checker.Outcome{}
		for _, inv := range res.Invariants {
			outcomes[inv.Invariant] = inv.Outcome
		}
		runs = append(runs, runVerdict{system: res.System, scenario: res.Scenario, seed: res.Seed, words: violatedWords(outcomes),
			outcome: outcomeOf(res)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the matrix in %s: %w", path, err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no matrix run (no %s, no run's %s): give a directory simrun matrix wrote, or a verdicts file", errUsage, path, fileVerdicts, reports.FileResult)
	}
	return runs, nil
}

func parseVerdictsFile(path string) ([]runVerdict, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	var runs []runVerdict
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		bad := func(why string) error {
			return fmt.Errorf("%w: %s line %d: %s (want system, scenario, seed, outcome and invariants, tab-separated, as simrun matrix writes them in %s)",
				errUsage, path, i+1, why, fileVerdicts)
		}
		if len(fields) != 5 {
			return nil, bad(fmt.Sprintf("%d fields", len(fields)))
		}
		seed, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			return nil, bad("seed " + strconv.Quote(fields[2]) + " is not a number")
		}
		v := runVerdict{system: fields[0], scenario: fields[1], seed: seed, outcome: outcome(fields[3])}
		if !slices.Contains([]outcome{outPass, outFail, outInconclusive, outError, outInterrupted}, v.outcome) {
			return nil, bad("outcome " + strconv.Quote(fields[3]) + " is none of pass, fail, inconclusive, error, interrupted")
		}
		if fields[4] != "-" {
			v.words = strings.Fields(fields[4])
		}
		runs = append(runs, v)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no run's verdict", errUsage, path)
	}
	return runs, nil
}

// sideOf is one side's runs of one cell.
type sideOf struct {
	pass, fail, unjudged int
	words                []string // every word any failing run showed, in order of first sight
}

func (s *sideOf) add(v runVerdict) {
	switch v.outcome {
	case outPass:
		s.pass++
	case outFail:
		s.fail++
		for _, w := range v.words {
			if !slices.Contains(s.words, w) {
				s.words = append(s.words, w)
			}
		}
	default:
		s.unjudged++
	}
}

func (s sideOf) String() string {
	n := s.pass + s.fail
	var b strings.Builder
	switch {
	case n == 0:
		b.WriteString("no judged run")
	case s.fail == 0:
		fmt.Fprintf(&b, "pass %d/%d", s.pass, n)
	default:
		fmt.Fprintf(&b, "fail %d/%d %s", s.fail, n, strings.Join(s.words, " "))
	}
	if s.unjudged > 0 {
		fmt.Fprintf(&b, " (+%d unjudged)", s.unjudged)
	}
	return b.String()
}

// Cell comparisons.
const (
	cmpAgree     = "agree"
	cmpRate      = "rate"
	cmpDisagree  = "DISAGREE"
	cmpUnjudged  = "unjudged"
	cmpUncovered = "uncovered"
)

// cellComparison is one cell judged both ways.
type cellComparison struct {
	system, scenario string
	real, virtual    sideOf
	status           string
	referenceFailed  bool
}

// compareVerdicts pairs the two sides' cells; realOnly counts the cells only the real side ran.
func compareVerdicts(real, virtual []runVerdict) (cells []cellComparison, realOnly int) {
	type key struct{ system, scenario string }
	realSides := map[key]*sideOf{}
	for _, v := range real {
		k := key{v.system, v.scenario}
		if realSides[k] == nil {
			realSides[k] = &sideOf{}
		}
		realSides[k].add(v)
	}
	index := map[key]int{}
	for _, v := range virtual {
		k := key{v.system, v.scenario}
		i, ok := index[k]
		if !ok {
			i = len(cells)
			index[k] = i
			cells = append(cells, cellComparison{system: v.system, scenario: v.scenario})
		}
		cells[i].virtual.add(v)
	}
	for k := range realSides {
		if _, ok := index[k]; !ok {
			realOnly++
		}
	}
	for i := range cells {
		c := &cells[i]
		rs, ok := realSides[key{c.system, c.scenario}]
		if ok {
			c.real = *rs
		}
		c.referenceFailed = referenceSystems[c.system] && (c.real.fail > 0 || c.virtual.fail > 0)
		c.status = judgeCell(ok, c.real, c.virtual)
	}
	return cells, realOnly
}

// judgeCell compares what each side saw: the outcomes each observed, pass or fail, whatever their
// counts.
func judgeCell(covered bool, real, virtual sideOf) string {
	switch {
	case !covered:
		return cmpUncovered
	case real.pass+real.fail == 0 || virtual.pass+virtual.fail == 0:
		return cmpUnjudged
	}
	rp, rf := real.pass > 0, real.fail > 0
	vp, vf := virtual.pass > 0, virtual.fail > 0
	switch {
	case rp == vp && rf == vf:
		return cmpAgree
	case (rp && vp) || (rf && vf):
		return cmpRate
	}
	return cmpDisagree
}

// compareCmd is 'simrun matrix compare REAL VIRTUAL' and 'simrun matrix verdicts DIR'.
func compareCmd(args []string, stdout, stderr io.Writer) (int, error) {
	if isHelp(args) {
		fmt.Fprint(stdout, compareUsage)
		return ExitOK, flag.ErrHelp
	}
	if len(args) != 2 || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[1], "-") {
		return ExitUsage, fmt.Errorf("%w: simrun matrix compare takes two matrices, REAL and VIRTUAL (directories or verdicts files), and no flags (got %q)", errUsage, args)
	}
	real, err := loadVerdicts(args[0])
	if err != nil {
		return ExitUsage, err
	}
	virtual, err := loadVerdicts(args[1])
	if err != nil {
		return ExitUsage, err
	}
	cells, realOnly := compareVerdicts(real, virtual)
	counts := map[string]int{}
	refFailed := 0
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tscenario\tcompared\treal\tvirtual")
	for _, c := range cells {
		counts[c.status]++
		status := c.status
		if c.referenceFailed {
			refFailed++
			status += ", REFERENCE FAILED"
		}
		if c.status != cmpAgree || c.referenceFailed {
			real := c.real.String()
			if c.status == cmpUncovered {
				real = "no verdict"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.system, c.scenario, status, real, c.virtual)
		}
	}
	tw.Flush()
	fmt.Fprintf(stdout, "\n%d cells compared: %d agree, %d by rate, %d DISAGREE, %d unjudged, %d uncovered; %d cells real time alone ran (virtual time refuses them)\n",
		len(cells), counts[cmpAgree], counts[cmpRate], counts[cmpDisagree], counts[cmpUnjudged], counts[cmpUncovered], realOnly)
	switch {
	case counts[cmpDisagree] > 0 || refFailed > 0:
		fmt.Fprintln(stderr, "simrun: virtual and real time judged a cell differently, or a reference system failed: see the cells listed")
		return ExitViolated, nil
	case counts[cmpUnjudged] > 0 || counts[cmpUncovered] > 0:
		fmt.Fprintln(stderr, "simrun: INCONCLUSIVE: no cell disagrees, but a cell has no judged run on one side, or no real verdict: run those cells again")
		return ExitInconclusive, nil
	}
	return ExitOK, nil
}

// verdictsCmd prints a matrix directory's verdicts in the verdicts file's format.
func verdictsCmd(args []string, stdout io.Writer) (int, error) {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return ExitUsage, fmt.Errorf("%w: simrun matrix verdicts takes one matrix directory (got %q)", errUsage, args)
	}
	runs, err := loadVerdicts(args[0])
	if err != nil {
		return ExitUsage, err
	}
	if err := writeVerdicts(stdout, []string{"simrun matrix verdicts of " + args[0]}, runs); err != nil {
		return ExitUsage, errors.Join(errors.New("write verdicts"), err)
	}
	return ExitOK, nil
}
