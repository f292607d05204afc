package simcli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/reports"
)

// outcome is what became of one job of a campaign.
type outcome string

const (
	outPass outcome = "pass"
	outFail outcome = "fail"
	// outInconclusive is a run whose timing verdicts cannot be trusted either way: neither a pass nor a
	// failure of the system. outcomeOf is where a run's result.json is read into an outcome.
	outInconclusive outcome = "inconclusive"
	outError        outcome = "error" // the run could not be set up: no history, no verdict
	outInterrupted  outcome = "interrupted"
	outNotRun       outcome = "not-run" // the campaign was interrupted before the job started
)

// outcomeOrder is the order outcomes are counted and shown in.
var outcomeOrder = []outcome{outPass, outFail, outInconclusive, outError, outInterrupted, outNotRun}

// word is how a summary counts the outcome ("3 passed").
func (o outcome) word() string {
	switch o {
	case outPass:
		return "passed"
	case outFail:
		return "failed"
	case outError:
		return "not set up"
	case outNotRun:
		return "not run"
	}
	return string(o)
}

// bad reports whether a job of this outcome is listed with its seed, causes and replay line.
func (o outcome) bad() bool { return o == outFail || o == outInconclusive || o == outError }

// outcomeOf reads a finished run's verdict.
func outcomeOf(res reports.RunResult) outcome {
	switch {
	case res.Meta.Interrupted:
		return outInterrupted
	case res.Passed:
		return outPass
	case res.Inconclusive:
		return outInconclusive
	}
	return outFail
}

// jobRecord is what a campaign keeps of one job.
type jobRecord struct {
	// Job is the job's index in the campaign definition's Jobs.
	Job      int     `json:"job"`
	Scenario string  `json:"scenario"`
	Seed     int64   `json:"seed"`
	Outcome  outcome `json:"outcome"`
	// Causes say why a run did not pass: the invariants violated or undecided, one phrase each.
	Causes []string `json:"causes,omitempty"`
	// Dir is the run's directory, relative to the directory of campaign.json; empty when nothing of the
	// run is left (it could not be set up, or never started).
	Dir string `json:"dir,omitempty"`
	// Kept says the whole run directory is kept (reports, history, logs); otherwise only result.json is.
	Kept   bool          `json:"kept,omitempty"`
	Replay string        `json:"replay"`
	Took   time.Duration `json:"took,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// campaignSchema is written into campaign.json; a reader refuses a newer one.
const campaignSchema = 1

// fileCampaign is the record of a campaign's shard, or of a merge of shards.
const fileCampaign = "campaign.json"

// campaignManifest is the content of campaign.json.
type campaignManifest struct {
	Schema   int         `json:"schema"`
	Campaign campaignDef `json:"campaign"`
	// Shard is the shard this directory holds (1..Campaign.Shards); 0 for a merge of shards.
	Shard int `json:"shard"`
	// Merged lists the shards a merge joined, in shard order.
	Merged      []mergedShard `json:"merged,omitempty"`
	Started     time.Time     `json:"started"`
	Wall        time.Duration `json:"wall"`
	Interrupted bool          `json:"interrupted,omitempty"`
	// Jobs are the records of this shard's jobs (of every job, for a merge), in job order.
	Jobs []jobRecord `json:"jobs"`
}

// mergedShard is one shard of a merge.
type mergedShard struct {
	Shard int `json:"shard"`
	// Dir is the shard's directory, relative to the merge's.
	Dir         string        `json:"dir"`
	Started     time.Time     `json:"started"`
	Wall        time.Duration `json:"wall"`
	Interrupted bool          `json:"interrupted,omitempty"`
}

func writeManifest(dir string, m campaignManifest) error {
	m.Schema = campaignSchema
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fileCampaign), append(b, '\n'), 0o644)
}

// errNotShard marks a directory that holds no campaign.json.
var errNotShard = errors.New("not a campaign directory")

func readManifest(dir string) (campaignManifest, error) {
	var m campaignManifest
	b, err := os.ReadFile(filepath.Join(dir, fileCampaign))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("%w: %s has no %s (is it the --out of a simrun campaign, and did that campaign finish or get interrupted, rather than killed?)",
			errNotShard, dir, fileCampaign)
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, fileCampaign), err)
	}
	if m.Schema < 1 || m.Schema > campaignSchema {
		return m, fmt.Errorf("%s has schema %d; this simrun reads 1 to %d: merge with the simrun that ran the campaign",
			filepath.Join(dir, fileCampaign), m.Schema, campaignSchema)
	}
	return m, nil
}

// causesOf names why a run did not pass, one phrase per invariant whose verdict keeps it from passing.
// The phrases carry no times or instance names, so that runs failing the same way on different seeds
// share them.
func causesOf(res reports.RunResult) []string {
	var out []string
	for _, inv := range res.Invariants {
		switch {
		case inv.OK:
		case inv.Expected:
			out = append(out, fmt.Sprintf("%s not violated as expected (%s)", inv.Invariant, inv.Outcome))
		case inv.Invariant == checker.InvAssumptions && inv.Outcome == checker.Unknown:
			out = append(out, assumptionsCause(inv.Message))
		default:
			out = append(out, fmt.Sprintf("%s %s", inv.Invariant, inv.Outcome))
		}
	}
	if len(out) == 0 && !res.Passed {
		out = append(out, "failed without a failing invariant")
	}
	return out
}

// faultLabel finds "f3 crash: " in an assumptions message: the failed (or undeclared) fault's ID and name.
var faultLabel = regexp.MustCompile(`(?:: |; )f[0-9]+ ([a-z0-9-]+): `)

// assumptionsCause condenses an undecided assumptions verdict to its kind, with the names of the faults
// it concerns.
func assumptionsCause(msg string) string {
	kind := ""
	switch {
	case strings.HasPrefix(msg, "the run did not go as scheduled"):
		kind = "fault failed"
	case strings.HasPrefix(msg, "the run went beyond the system's stated assumptions"):
		kind = "beyond the stated assumptions"
	case strings.HasPrefix(msg, "the run was interrupted"):
		kind = "interrupted"
	default:
		return "assumptions unknown"
	}
	var names []string
	for _, m := range faultLabel.FindAllStringSubmatch(msg, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	if len(names) > 0 {
		kind += " (" + strings.Join(names, ", ") + ")"
	}
	return "assumptions unknown: " + kind
}
