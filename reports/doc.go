// Package reports renders the outcome of harness runs for the people and machines that read them.
//
// For one run, WriteRun writes into a directory:
//
//   - report.html: a self-contained page (no scripts, fonts or network). A passing run opens with one
//     line on why it passed, then its timeline. A failing run opens with a
//     diagnosis: its violations grouped by likely cause (the mutual-exclusion findings of one offending
//     instance, or the findings of one other invariant), each group told in a few sentences read from
//     the history (what happened, on which endpoints, when, and the faults, failed calls and missing
//     deadline that explain it), followed by the timeline, which marks every listed violation (a density
//     band over a run of them). Then the verdict per invariant,
//     the scenario's parameters and replay command, an SVG timeline of every endpoint (who held the lease,
//     fault windows, violations), endpoints involved in violations and failovers in detail, the failover
//     table, balance and backend operation charts, and the violations by group: the first few of each
//     with a zoomed timeline and the history excerpt around it, the others in a table;
//   - linearizability.html: the linearizability checker's visualization, when the caller supplies it,
//     given a header (run, seed, verdicts, a link back to report.html), clients named by instance and
//     operations labelled with their endpoint;
//   - summary.md: a short Markdown summary that fits a pull-request comment, with the diagnosis;
//   - result.json: the machine-readable verdict (schema in SCHEMA.md, version ResultSchemaVersion);
//   - junit.xml: one test case per invariant, for CI test views;
//   - history.jsonl: the full recorded history, which can be re-checked and re-rendered later.
//
// For a suite, WriteSuite writes index.html, summary.md and junit.xml over every run, linking each run's
// report by a relative path. WriteIndex writes the index and the JUnit file alone, for runs a caller
// summarises its own way (a seed campaign: runs named by scenario and seed, passing ones pruned to their
// result.json).
//
// Every output directory holds a marker, FileMarker, naming what it holds (a run, or a collection and its
// runs). CheckOut says whether a directory may be written into, Identify what a directory holds; see
// SCHEMA.md for the rules.
//
// Reports draw what the history and the checker's report say; they judge nothing themselves, except that
// Judge applies a scenario's expected violations to a report. Generation is linear in the history's size
// and drawing is bounded by the picture's resolution, so a history of 100,000 events renders in seconds.
package reports

import "errors"

// Errors returned by this package.
var (
	// ErrNoDir is returned when an output directory is empty.
	ErrNoDir = errors.New("reports: no output directory given")
	// ErrSchema is returned by ReadResult for a result.json written with a newer, incompatible schema.
	ErrSchema = errors.New("reports: unsupported result schema version")
)
