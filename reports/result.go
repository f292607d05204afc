package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// ResultSchemaVersion is written into every result.json. Adding fields keeps the version; renaming,
// removing or changing the meaning of one raises it. SCHEMA.md documents the format.
const ResultSchemaVersion = 3

// RunResult is the content of result.json: the verdict of one run, for machines.
type RunResult struct {
	// Schema is ResultSchemaVersion when written.
	Schema int `json:"schema"`
	// Scenario, Suite, System, Seed and Command repeat the history's header for convenience.
	Scenario string `json:"scenario"`
	Suite    string `json:"suite,omitempty"`
	System   string `json:"system"`
	Seed     int64  `json:"seed"`
	Command  string `json:"command,omitempty"`
	// Passed is the run's verdict after expectations.
	Passed bool `json:"passed"`
	// Inconclusive is set on a run that did not pass only because timing findings coincided with the
	// harness's own lag (see Inconclusive): neither passed nor failed.
	Inconclusive bool `json:"inconclusive"`
	// Interrupted is set on a run stopped before its end (Ctrl-C): its history is partial, and it has
	// no verdict whatever Passed says about what it recorded.
	Interrupted bool `json:"interrupted"`
	// Expected lists the invariants the scenario expected to be violated.
	Expected []string `json:"expected,omitempty"`
	// Invariants is the verdict per invariant, in the checker's order.
	Invariants []InvariantResult `json:"invariants"`
	// RefusedStale counts polls refused by fencing. They are never violations of single-poller; the
	// stale-poll invariant judges them (a violation inside the system's assumptions, caught outside).
	RefusedStale int `json:"refused_stale"`
	// Caught counts every finding caught outside the system's assumptions, over all invariants.
	Caught int `json:"caught"`
	// Failover summarises takeover latencies per fault, in order of the faults' times.
	Failover []FailoverSummary `json:"failover,omitempty"`
	// Meta is the history's header.
	Meta history.Meta `json:"meta"`
	// Report is the checker's full report.
	Report checker.Report `json:"report"`
	// Files lists the files written next to result.json.
	Files []string `json:"files"`
}

// InvariantResult is the verdict of one invariant with expectations applied.
type InvariantResult struct {
	Invariant string          `json:"invariant"`
	Outcome   checker.Outcome `json:"outcome"`
	// Expected is set when the scenario expected this invariant to be violated.
	Expected bool `json:"expected,omitempty"`
	// OK says whether this verdict lets the run pass (pass, skipped, or violated as expected).
	OK         bool   `json:"ok"`
	Message    string `json:"message"`
	Violations int    `json:"violations"` // listed plus truncated; never caught findings
	Truncated  int    `json:"truncated,omitempty"`
	// Caught counts the findings caught outside the system's assumptions (safe), listed plus truncated.
	Caught int `json:"caught,omitempty"`
	// Inconclusive counts the timing findings the harness's own lag can account for (listed in
	// report.results[].inconclusive, each with its lag).
	Inconclusive int `json:"inconclusive,omitempty"`
}

// FailoverSummary is the takeovers measured after one fault. Latencies are nanoseconds, -1 when no
// endpoint was taken over.
type FailoverSummary struct {
	FaultID   string        `json:"fault_id"`
	Fault     string        `json:"fault"`
	Targets   []string      `json:"targets,omitempty"`
	At        time.Duration `json:"at"`
	Affected  int           `json:"affected"`
	TakenOver int           `json:"taken_over"`
	OverBound int           `json:"over_bound"`
	Never     int           `json:"never"`
	P50       time.Duration `json:"p50"`
	P99       time.Duration `json:"p99"`
	Max       time.Duration `json:"max"`
	Bound     time.Duration `json:"bound"`
}

// resultOf builds result.json's content.
func resultOf(r Run, m *model, linOK bool) RunResult {
	mt := r.History.Meta
	mt.Schema = max(mt.Schema, history.SchemaVersion)
	res := RunResult{
		Schema: ResultSchemaVersion, Scenario: mt.Scenario, Suite: mt.Suite, System: mt.System, Seed: mt.Seed,
		Command: mt.Command, Passed: r.Passed, Inconclusive: m.inconclusive, Interrupted: mt.Interrupted, Expected: r.expected(), Meta: mt, Report: r.Report,
		Invariants: []InvariantResult{}, RefusedStale: r.Report.Refused, Caught: m.caughtCount(),
	}
	for _, rv := range m.results {
		res.Invariants = append(res.Invariants, InvariantResult{
			Invariant: rv.res.Invariant, Outcome: rv.res.Outcome, Expected: slices.Contains(res.Expected, rv.res.Invariant),
			OK: rv.st.ok(), Message: rv.res.Message, Violations: len(rv.res.Violations) + rv.res.Truncated,
			Truncated: rv.res.Truncated, Caught: rv.res.CaughtCount(), Inconclusive: len(rv.res.Inconclusive),
		})
	}
	for _, g := range m.groups {
		res.Failover = append(res.Failover, FailoverSummary{
			FaultID: g.faultID, Fault: g.fault, Targets: g.targets, At: g.at, Affected: len(g.items),
			TakenOver: g.polled, OverBound: g.over, Never: g.never, P50: g.p50, P99: g.p99, Max: g.max, Bound: g.bound,
		})
	}
	for _, f := range runFiles(linOK) {
		res.Files = append(res.Files, f.Name)
	}
	res.Files = append([]string{FileReport}, res.Files...)
	return res
}

// writeResultJSON writes result.json.
func writeResultJSON(w io.Writer, res RunResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// ReadResult loads dir/result.json. It fails with ErrSchema for a file written by a newer, incompatible
// version of this package.
func ReadResult(dir string) (RunResult, error) {
	var res RunResult
	b, err := os.ReadFile(filepath.Join(dir, FileResult))
	if err != nil {
		return res, fmt.Errorf("reports: %w", err)
	}
	var head struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return res, fmt.Errorf("reports: %s: %w", FileResult, err)
	}
	if head.Schema > ResultSchemaVersion || head.Schema < 1 {
		return res, fmt.Errorf("%w %d in %s (this build reads 1 to %d)", ErrSchema, head.Schema,
			filepath.Join(dir, FileResult), ResultSchemaVersion)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return res, errors.Join(fmt.Errorf("reports: %s", FileResult), err)
	}
	return res, nil
}

// Entry returns the suite entry for this result; dir is the run's directory relative to the suite's.
func (r RunResult) Entry(dir string) SuiteEntry {
	return SuiteEntry{Dir: dir, Meta: r.Meta, Report: r.Report, Passed: r.Passed}
}
