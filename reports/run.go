package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// File names written by WriteRun and WriteSuite.
const (
	FileReport          = "report.html"
	FileLinearizability = "linearizability.html"
	FileSummary         = "summary.md"
	FileResult          = "result.json"
	FileJUnit           = "junit.xml"
	FileHistory         = "history.jsonl"
	FileIndex           = "index.html"
)

// Run is everything needed to report one run.
type Run struct {
	// History is the recorded history, header included.
	History history.History
	// Report is the checker's verdict over History.
	Report checker.Report
	// Passed is the run's verdict after expectations (a scenario may expect violations); see Judge.
	Passed bool
	// Expected lists the invariants the scenario was expected to violate; nil means History.Meta.Expect.
	Expected []string
	// Linearizability, if set, writes the linearizability checker's visualization (a complete HTML page).
	// Nil means linearizability.html is not written and the report does not link it.
	Linearizability func(io.Writer) error
	// KeepHistory leaves history.jsonl as it is in dir (a saved run checked again) instead of writing
	// History there.
	KeepHistory bool
	// ResultOnly writes result.json (and the marker) alone: what a campaign keeps of a run that passed.
	ResultOnly bool

	_ struct{}
}

// expected returns the run's expected violations.
// expect is the run's expectations: its expected violations (as expected gives them) and what its
// system does not promise.
func (r Run) expect() Expect {
	return Expect{Violated: r.expected(), NotPromised: r.History.Meta.NotPromised}
}

func (r Run) expected() []string {
	if r.Expected != nil {
		return r.Expected
	}
	return r.History.Meta.Expect
}

// WriteRun writes every file of a run's report into dir, creating it if needed: report.html,
// linearizability.html (only when r.Linearizability is set), summary.md, result.json, junit.xml and
// history.jsonl (unless r.KeepHistory), and marks dir as a run (FileMarker). It refuses a directory
// marked as holding anything else. It writes every file it can and returns the errors of those it
// could not, joined. A failing Linearizability function leaves a page saying so in
// linearizability.html. Whether dir may be written at all is the caller's to check (CheckOut).
func WriteRun(dir string, r Run) error {
	if dir == "" {
		return ErrNoDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := ensureMarker(dir, KindRun, nil); err != nil {
		return err
	}
	var errs []error
	linOK := false
	m := buildModel(r)
	if r.ResultOnly {
		return writeFileWith(filepath.Join(dir, FileResult), func(w io.Writer) error { return writeResultJSON(w, resultOf(r, m, false)) })
	}
	if r.Linearizability != nil {
		err := writeLinearizability(filepath.Join(dir, FileLinearizability), r.Linearizability, m)
		errs = append(errs, err)
		linOK = true // the file exists either way: the page or the error page
	}
	errs = append(errs,
		writeFileWith(filepath.Join(dir, FileReport), func(w io.Writer) error { return renderRunHTML(w, m, linOK) }),
		writeFileWith(filepath.Join(dir, FileSummary), func(w io.Writer) error { return renderRunMarkdown(w, m) }),
		writeFileWith(filepath.Join(dir, FileResult), func(w io.Writer) error { return writeResultJSON(w, resultOf(r, m, linOK)) }),
		writeFileWith(filepath.Join(dir, FileJUnit), func(w io.Writer) error {
			return writeJUnit(w, r.History.Meta.Suite, []junitRun{junitRunOf(r.History.Meta, r.Report, r.expected())})
		}),
	)
	if !r.KeepHistory {
		if err := history.WriteFile(filepath.Join(dir, FileHistory), r.History); err != nil {
			errs = append(errs, fmt.Errorf("reports: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ReadRun loads a run written by WriteRun (history.jsonl and result.json) without re-checking it, so
// its report can be re-rendered with the saved verdict. Re-checking the history is the caller's choice:
// load it with history.ReadFile, check it, and call WriteRun.
func ReadRun(dir string) (Run, error) {
	res, err := ReadResult(dir)
	if err != nil {
		return Run{}, err
	}
	h, err := history.ReadFile(filepath.Join(dir, FileHistory))
	if err != nil {
		return Run{}, fmt.Errorf("reports: %w", err)
	}
	return Run{History: h, Report: res.Report, Passed: res.Passed, Expected: res.Expected}, nil
}

// writeLinearizability writes the visualization with its context (decorateLinearizability), replacing it
// with an explanatory page if fn fails.
func writeLinearizability(path string, fn func(io.Writer) error, m *model) error {
	var buf bytes.Buffer
	ferr := fn(&buf)
	if ferr == nil {
		b := decorateLinearizability(buf.Bytes(), m)
		buf.Reset()
		buf.Write(b)
	}
	if ferr != nil {
		buf.Reset()
		fmt.Fprintf(&buf, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"/><title>linearizability</title></head>"+
			"<body><p>The linearizability visualization could not be written: %s</p></body></html>\n", esc(ferr.Error()))
		ferr = fmt.Errorf("reports: linearizability visualization: %w", ferr)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return errors.Join(ferr, fmt.Errorf("reports: %w", err))
	}
	return ferr
}

// writeFileWith renders into memory and writes path only when rendering succeeded.
func writeFileWith(path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return fmt.Errorf("reports: %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}
