// Package reports renders the outcome of harness runs for the people and machines that read them.
//
// For one run, WriteRun writes into a directory:
//
//   - report.html: a self-contained page (no scripts, fonts or network) with the verdict per invariant,
//     the scenario's parameters and replay command, an SVG timeline of every endpoint (who held the lease,
//     fault windows, violations), endpoints involved in violations and failovers in detail, the failover
//     table, balance and backend operation charts, and the history excerpt around each violation;
//   - linearizability.html: the linearizability checker's visualization, when the caller supplies it;
//   - summary.md: a short Markdown summary that fits a pull-request comment;
//   - result.json: the machine-readable verdict (schema in SCHEMA.md, version ResultSchemaVersion);
//   - junit.xml: one test case per invariant, for CI test views;
//   - history.jsonl: the full recorded history, which can be re-checked and re-rendered later.
//
// For a suite, WriteSuite writes index.html, summary.md and junit.xml over every run, linking each run's
// report by a relative path.
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
