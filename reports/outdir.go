package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Every directory Tenure writes output into holds a marker, FileMarker: a small JSON file naming what
// the directory is (a run, a suite, a matrix, a bench or a campaign) and, for a collection, the
// directories of its runs. Commands that write check their directory first (CheckOut); commands that
// re-render act only on what Identify recognises. Neither ever looks below a directory that is not
// itself a Tenure collection, and a collection's runs are the ones its marker names, not whatever
// directories happen to sit under it.

// FileMarker is the name of the marker file.
const FileMarker = ".tenure.json"

// Files simrun writes into a run directory next to the reports.
const (
	FileSchedule = "schedule.txt"
	FileLog      = "instances.log"
)

// MarkerSchemaVersion is written into every marker; ReadMarker refuses a newer one.
const MarkerSchemaVersion = 1

// Kind is what an output directory holds.
type Kind string

// The kinds of output directory.
const (
	KindRun      Kind = "run"      // one run: its reports and history.jsonl
	KindSuite    Kind = "suite"    // a suite or a list of scenarios: index.html over its runs
	KindMatrix   Kind = "matrix"   // simrun matrix: matrix.md and index.html over its runs
	KindBench    Kind = "bench"    // simrun bench: the runs it kept
	KindCampaign Kind = "campaign" // a campaign over many seeds
)

var knownKinds = []Kind{KindRun, KindSuite, KindMatrix, KindBench, KindCampaign}

// Marker is the content of FileMarker.
type Marker struct {
	// Schema is MarkerSchemaVersion when written.
	Schema int `json:"tenure_output"`
	// Kind is what the directory holds.
	Kind Kind `json:"kind"`
	// Runs are a collection's run directories, relative to its own, in the order they were planned.
	// Empty for a run.
	Runs []string `json:"runs,omitempty"`

	_ struct{}
}

var (
	// ErrNoMarker is returned by ReadMarker for a directory without FileMarker.
	ErrNoMarker = errors.New("reports: no " + FileMarker + " marker")
	// ErrOutRefused is wrapped by CheckOut's refusals.
	ErrOutRefused = errors.New("reports: output directory refused")
	// ErrNotOutput is wrapped by Identify's refusals.
	ErrNotOutput = errors.New("reports: not a directory Tenure wrote")
)

// dirError is a refusal that names the directory, what is wrong with it and what to do.
type dirError struct {
	sentinel       error
	dir, what, fix string
}

func (e *dirError) Error() string { return e.dir + " " + e.what + ": " + e.fix }
func (e *dirError) Unwrap() error { return e.sentinel }

// WriteMarker records in dir (created if needed) that it holds output of kind m.Kind, replacing any
// marker there. A collection's Runs must be paths inside dir; a run has none.
func WriteMarker(dir string, m Marker) error {
	if dir == "" {
		return ErrNoDir
	}
	if err := m.check(); err != nil {
		return err
	}
	m.Schema = MarkerSchemaVersion
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	// Written whole or not at all: a marker cut short would make the directory foreign.
	tmp, err := os.CreateTemp(dir, FileMarker+".*")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	merr := tmp.Chmod(0o644) // as every other file of the output; CreateTemp makes it private
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, FileMarker)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// ReadMarker reads dir's marker; ErrNoMarker when it has none.
func ReadMarker(dir string) (Marker, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return Marker{}, fmt.Errorf("%w in %s", ErrNoMarker, dir)
	}
	if err != nil {
		return Marker{}, fmt.Errorf("reports: %w", err)
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return Marker{}, fmt.Errorf("reports: %s: %w", filepath.Join(dir, FileMarker), err)
	}
	if m.Schema < 1 || m.Schema > MarkerSchemaVersion {
		return Marker{}, fmt.Errorf("reports: %s: marker version %d (this build reads 1 to %d)", filepath.Join(dir, FileMarker), m.Schema, MarkerSchemaVersion)
	}
	if err := m.check(); err != nil {
		return Marker{}, fmt.Errorf("%s: %w", filepath.Join(dir, FileMarker), err)
	}
	return m, nil
}

// check refuses an unknown kind, runs in a run, and runs outside the collection's directory.
func (m Marker) check() error {
	if !slices.Contains(knownKinds, m.Kind) {
		return fmt.Errorf("reports: unknown output kind %q", m.Kind)
	}
	if m.Kind == KindRun && len(m.Runs) > 0 {
		return errors.New("reports: a run's marker names no runs")
	}
	for _, r := range m.Runs {
		if !filepath.IsLocal(filepath.FromSlash(r)) {
			return fmt.Errorf("reports: run directory %q is not inside the collection's directory", r)
		}
	}
	return nil
}

// ensureMarker marks dir as holding kind unless it already says so; it refuses a directory marked
// as holding something else.
func ensureMarker(dir string, kind Kind, runs []string) error {
	m, err := ReadMarker(dir)
	switch {
	case errors.Is(err, ErrNoMarker):
		return WriteMarker(dir, Marker{Kind: kind, Runs: runs})
	case err != nil:
		return err
	case m.Kind == kind || (kind != KindRun && m.Kind != KindRun):
		return nil // a collection's own marker names its runs
	}
	return fmt.Errorf("%w: %s holds a %s, not a %s", ErrOutRefused, dir, m.Kind, kind)
}

// CheckOut reports whether dir may receive output of kind: it must not exist yet, be empty, or hold a
// marker of the same kind — and a run directory must not hold a history.jsonl already, since a run's
// history is never replaced. A source repository (a directory holding go.mod or .git) is refused
// whatever it holds. CheckOut writes nothing; call it before anything starts.
func CheckOut(dir string, kind Kind) error {
	if dir == "" {
		return ErrNoDir
	}
	refuse := func(what, fix string) error {
		return &dirError{sentinel: ErrOutRefused, dir: dir, what: what, fix: fix}
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: %v", ErrOutRefused, err)
	case !st.IsDir():
		return refuse("is a file", "give a directory")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOutRefused, err)
	}
	for _, src := range []string{"go.mod", ".git"} {
		if hasEntry(entries, src) {
			return refuse("is a source repository (it holds "+src+")", "give a directory of its own, such as simrun-out/NAME")
		}
	}
	if len(entries) == 0 {
		return nil
	}
	m, err := ReadMarker(dir)
	switch {
	case errors.Is(err, ErrNoMarker):
		return refuse("holds files simrun did not write ("+sample(entries)+") and no "+FileMarker, "give a new or empty directory")
	case err != nil:
		return refuse("has a marker that cannot be read ("+err.Error()+")", "give a new or empty directory")
	case m.Kind != kind:
		return refuse("holds a simrun "+string(m.Kind)+", not a "+string(kind), "give a new or empty directory")
	case kind == KindRun && hasEntry(entries, FileHistory):
		return refuse("already holds a run (a run's history.jsonl is never replaced)", "give a new or empty directory")
	}
	return nil
}

// Found is what Identify recognised.
type Found struct {
	// Kind is what the directory holds.
	Kind Kind
	// Runs are a collection's run directories, relative to it.
	Runs []string
	// Legacy is set for a directory recognised without a marker: written before markers were.
	Legacy bool

	_ struct{}
}

// Identify says what dir holds, by its marker. A directory without one is recognised only in two
// strict cases, for output written before markers:
//
//   - a run: a history.jsonl whose header names a scenario and a system, and nothing but the files a
//     run writes beside it (a history saved alone, as CI keeps it, is one);
//   - a suite or a matrix: the index.html, summary.md and junit.xml of WriteSuite (and matrix.md for a
//     matrix), with nothing but directories beside them; its runs are those its index.html links to.
//
// Anything else is refused with ErrNotOutput and a message that says what was expected and found.
func Identify(dir string) (Found, error) {
	refuse := func(found, fix string) error {
		return &dirError{sentinel: ErrNotOutput, dir: dir,
			what: "is not a directory simrun wrote",
			fix:  "expected a run (its history.jsonl), a suite or a matrix (its " + FileMarker + " names its runs); found " + found + fix}
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Found{}, refuse("nothing: it does not exist", "")
	case err != nil:
		return Found{}, fmt.Errorf("%w: %v", ErrNotOutput, err)
	case !st.IsDir():
		return Found{}, refuse("a file", "")
	}
	m, err := ReadMarker(dir)
	if err == nil {
		return Found{Kind: m.Kind, Runs: m.Runs}, nil
	}
	if !errors.Is(err, ErrNoMarker) {
		return Found{}, refuse("a marker that cannot be read ("+err.Error()+")", "")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Found{}, fmt.Errorf("%w: %v", ErrNotOutput, err)
	}
	if len(entries) == 0 {
		return Found{}, refuse("an empty directory", "")
	}
	if hasEntry(entries, FileHistory) {
		if !tenureHistory(filepath.Join(dir, FileHistory)) {
			return Found{}, refuse("a history.jsonl whose first line is not a Tenure history header (no scenario and system), and no "+FileMarker, "")
		}
		if other := foreign(entries, runDirFiles, false); len(other) > 0 {
			return Found{}, refuse("a history.jsonl next to entries a run does not write ("+strings.Join(other, ", ")+"), and no "+FileMarker,
				": to re-check that history, copy it alone into a new directory and give that")
		}
		return Found{Kind: KindRun, Legacy: true}, nil
	}
	if hasEntry(entries, FileIndex) && hasEntry(entries, FileSummary) && hasEntry(entries, FileJUnit) {
		runs, ok := indexRuns(filepath.Join(dir, FileIndex))
		other := foreign(entries, collectionFiles, true)
		if ok && len(other) == 0 {
			kind := KindSuite
			if hasEntry(entries, fileMatrix) {
				kind = KindMatrix
			}
			return Found{Kind: kind, Runs: runs, Legacy: true}, nil
		}
	}
	return Found{}, refuse("no "+FileMarker+" and no history.jsonl among its "+sample(entries), "")
}

// fileMatrix is the matrix's table, written by simrun matrix next to the index.
const fileMatrix = "matrix.md"

// FileVerdicts is a matrix's verdicts, one line per run, written by simrun matrix next to its index
// (what simrun matrix compare reads).
const FileVerdicts = "verdicts.tsv"

// runDirFiles are the files a run directory holds.
var runDirFiles = []string{FileMarker, FileReport, FileLinearizability, FileSummary, FileResult, FileJUnit, FileHistory, FileSchedule, FileLog}

// collectionFiles are the files a suite or matrix directory holds beside its runs' directories.
var collectionFiles = []string{FileMarker, FileIndex, FileSummary, FileJUnit, fileMatrix, FileVerdicts}

// foreign lists the entries that are not among names (nor directories, when dirsOK), at most five.
func foreign(entries []os.DirEntry, names []string, dirsOK bool) []string {
	var out []string
	for _, e := range entries {
		switch {
		case dirsOK && e.IsDir():
		case !e.IsDir() && slices.Contains(names, e.Name()):
		default:
			out = append(out, e.Name())
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return out
}

// tenureHistory reports whether path's first line is a Tenure history header.
func tenureHistory(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	if !sc.Scan() {
		return false
	}
	var head struct {
		Schema   int    `json:"schema"`
		Scenario string `json:"scenario"`
		System   string `json:"system"`
	}
	return json.Unmarshal(sc.Bytes(), &head) == nil && head.Schema >= 1 && head.Scenario != "" && head.System != ""
}

// indexRow matches the link of a run in a suite index (index.tmpl): its directory, escaped.
var indexRow = regexp.MustCompile(`<tr class="run [a-z]+"><td class="nowrap"><a href="([^"]*)/` + regexp.QuoteMeta(FileReport) + `">`)

// indexRuns reads the run directories a suite index links to; ok is false when the file is not a suite
// index or a link leads outside its directory.
func indexRuns(path string) ([]string, bool) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `<table class="suite">`) {
		return nil, false
	}
	var runs []string
	for _, m := range indexRow.FindAllStringSubmatch(string(b), -1) {
		var segs []string
		for _, s := range strings.Split(html.UnescapeString(m[1]), "/") {
			u, err := url.PathUnescape(s)
			if err != nil || u == "" || strings.Contains(u, ":") { // an absolute path or a URL: not a run of this suite
				return nil, false
			}
			segs = append(segs, u)
		}
		rel := filepath.Join(segs...)
		if !filepath.IsLocal(rel) {
			return nil, false
		}
		if !slices.Contains(runs, filepath.ToSlash(rel)) {
			runs = append(runs, filepath.ToSlash(rel))
		}
	}
	return runs, len(runs) > 0
}

func hasEntry(entries []os.DirEntry, name string) bool {
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == name })
}

// sample counts the entries of a directory and names a few, for a message: "5 entries: a, b/, c and
// 2 more".
func sample(entries []os.DirEntry) string {
	var names []string
	for i, e := range entries {
		if i == 3 {
			names = append(names, fmt.Sprintf("%d more", len(entries)-3))
			break
		}
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	what := "entries"
	if len(entries) == 1 {
		what = "entry"
	}
	list := names[0]
	if len(names) > 1 {
		list = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return fmt.Sprintf("%d %s: %s", len(entries), what, list)
}
