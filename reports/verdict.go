package reports

import (
	"slices"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// status is an invariant's verdict after the scenario's expectations are applied.
type status int

const (
	stPass     status = iota // held
	stSkipped                // not applicable, or its assumptions failed
	stExpected               // violated, as the scenario expected
	stViolated               // violated, unexpectedly
	stMissed                 // expected to be violated, but was not: the checker missed it
	stUnknown                // could not be decided (checker timeout, incomplete history)
	stCaught                 // broken only outside the system's assumptions, and stopped before the resource
	// stInconclusive: a timing invariant broken only while the harness itself ran late: no evidence
	// either way, so neither a pass nor a failure.
	stInconclusive
	// stNotPromised: not held (violated, inconclusive, unknown), by an invariant the system does not
	// promise: shown, and no reason for the run to fail.
	stNotPromised
)

// ok reports whether the status lets the run pass.
func (s status) ok() bool {
	return s == stPass || s == stSkipped || s == stExpected || s == stCaught || s == stNotPromised
}

// label is the status for a person.
func (s status) label() string {
	switch s {
	case stPass:
		return "pass"
	case stSkipped:
		return "skipped"
	case stExpected:
		return "violated (expected)"
	case stViolated:
		return "violated"
	case stMissed:
		return "not violated (expected to be)"
	case stCaught:
		return "caught (safe)"
	case stInconclusive:
		return "inconclusive (harness lag)"
	case stNotPromised:
		return "not held, not promised"
	default:
		return "unknown"
	}
}

// class is the status's CSS class.
func (s status) class() string {
	switch s {
	case stPass:
		return "pass"
	case stSkipped:
		return "skipped"
	case stExpected:
		return "expected"
	case stViolated, stMissed:
		return "violated"
	case stCaught:
		return "caught"
	case stInconclusive:
		return "inconclusive"
	case stNotPromised:
		return "notpromised"
	default:
		return "unknown"
	}
}

// icon is a one-character marker for Markdown.
func (s status) icon() string {
	switch s {
	case stPass, stExpected:
		return "✅"
	case stSkipped:
		return "⏭️"
	case stCaught:
		return "🛡️"
	case stInconclusive:
		return "⏳"
	case stNotPromised:
		return "➖"
	case stViolated, stMissed:
		return "❌"
	default:
		return "❓"
	}
}

// Expect is what a run's verdict expects: the violations its scenario expects, and the invariants its
// system does not promise.
type Expect struct {
	Violated    []string
	NotPromised []string
}

// ExpectOf reads a run's expectations from its history's header.
func ExpectOf(m history.Meta) Expect { return Expect{Violated: m.Expect, NotPromised: m.NotPromised} }

// statusOf applies expectations to one result.
func statusOf(res checker.Result, e Expect) status {
	exp := slices.Contains(e.Violated, res.Invariant)
	if !exp && slices.Contains(e.NotPromised, res.Invariant) {
		switch res.Outcome {
		case checker.Pass, checker.Skipped, checker.Caught:
		default:
			return stNotPromised
		}
	}
	switch res.Outcome {
	case checker.Pass:
		if exp {
			return stMissed
		}
		return stPass
	case checker.Violated:
		if exp {
			return stExpected
		}
		return stViolated
	case checker.Skipped:
		if exp {
			return stMissed
		}
		return stSkipped
	case checker.Caught:
		if exp {
			return stMissed
		}
		return stCaught
	case checker.Inconclusive:
		// Expected or not: a finding the harness's lag can account for shows nothing of the system.
		return stInconclusive
	default:
		return stUnknown
	}
}

// Judge reports whether a run passes given the invariants its scenario expects to be violated: every
// expected invariant must be reported violated, and every other one must pass, be caught or be skipped. An unknown
// verdict never passes. Callers may compute Run.Passed with it.
func Judge(rep checker.Report, e Expect) bool {
	for _, inv := range e.Violated {
		found := false
		for _, res := range rep.Results {
			if res.Invariant == inv {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	for _, res := range rep.Results {
		if !statusOf(res, e).ok() {
			return false
		}
	}
	return true
}

// Inconclusive reports whether a run that did not pass is inconclusive: every invariant that keeps it
// from passing is inconclusive (a timing verdict the harness's own lag can account for), none violated,
// missed or unknown. Such a run is evidence neither way: it is neither passed nor failed, and simrun
// exits with a code of its own for it.
func Inconclusive(rep checker.Report, e Expect) bool {
	if Judge(rep, e) {
		return false
	}
	for _, inv := range e.Violated {
		if !slices.ContainsFunc(rep.Results, func(r checker.Result) bool { return r.Invariant == inv }) {
			return false
		}
	}
	found := false
	for _, res := range rep.Results {
		switch st := statusOf(res, e); {
		case st == stInconclusive:
			found = true
		case !st.ok():
			return false
		}
	}
	return found
}

// Verdict is a run's badge, the same in every output: INTERRUPTED when the run was stopped before its
// end (its history is partial, so nothing is concluded from it, whatever it shows), else PASSED,
// INCONCLUSIVE or FAILED. Class is its CSS class.
type Verdict struct{ Word, Class string }

// verdictOf is the badge of a run that passed, was inconclusive or was interrupted.
func verdictOf(passed, inconclusive, interrupted bool) Verdict {
	switch {
	case interrupted:
		return Verdict{"INTERRUPTED", "interrupted"}
	case passed:
		return Verdict{"PASSED", "pass"}
	case inconclusive:
		return Verdict{"INCONCLUSIVE", "inconclusive"}
	}
	return Verdict{"FAILED", "violated"}
}

// verdict is the run's badge.
func (m *model) verdict() Verdict { return verdictOf(m.passed, m.inconclusive, m.meta.Interrupted) }

// verdictIcon is a badge's class as a Markdown symbol.
func verdictIcon(class string) string {
	switch class {
	case "pass":
		return "✅"
	case "inconclusive":
		return "⏳"
	case "interrupted":
		return "⏸️"
	}
	return "❌"
}
