package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/checker"
	"github.com/tenurelabs/tenure/history"
)

// junitRun is one scenario's contribution to a JUnit file.
type junitRun struct {
	meta   history.Meta
	rep    checker.Report
	expect Expect
	bySeed bool // name the test suite by scenario and seed (runs of one scenario on many seeds)
}

func junitRunOf(meta history.Meta, rep checker.Report, expected []string) junitRun {
	return junitRun{meta: meta, rep: rep, expect: Expect{Violated: expected, NotPromised: meta.NotPromised}}
}

type jSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []jSuite `xml:"testsuite"`
}

type jSuite struct {
	Name       string      `xml:"name,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Timestamp  string      `xml:"timestamp,attr,omitempty"`
	Properties []jProperty `xml:"properties>property"`
	Cases      []jCase     `xml:"testcase"`
}

type jProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type jCase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Time      string `xml:"time,attr"`
	Failure   *jMsg  `xml:"failure"`
	Error     *jMsg  `xml:"error"`
	Skipped   *jMsg  `xml:"skipped"`
	SystemOut string `xml:"system-out,omitempty"`
}

type jMsg struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// writeJUnit writes one <testsuite> per run and one <testcase> per invariant: a violation is a
// <failure>, an unknown verdict an <error>, a skipped check <skipped>. A violation the scenario expected
// passes; an expected violation that did not happen fails. A caught verdict passes and says so in its
// <system-out>: caught findings are safe and never failures.
//
// An inconclusive verdict is <skipped> with a message that begins "inconclusive" and gives the lag, and
// the suite carries the properties inconclusive=true and harness_lag_max. JUnit knows pass, failure,
// error and skipped; an inconclusive verdict is evidence neither way, which is what a skipped test
// reports: a <failure> would blame the system for the machine's load (and teach a team to ignore the
// gate), an <error> says the test itself broke, and a pass would hide that nothing was shown. What stops
// a CI job is simrun's exit code (3), not the JUnit file; the file shows why, in the place a team
// already looks.
func writeJUnit(w io.Writer, name string, runs []junitRun) error {
	if name == "" {
		name = "simrun"
	}
	top := jSuites{Name: name}
	var total time.Duration
	for _, r := range runs {
		s := junitSuite(r)
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Errors += s.Errors
		top.Skipped += s.Skipped
		total += r.meta.Duration
		top.Suites = append(top.Suites, s)
	}
	top.Time = secs(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(top); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitSuite builds the test suite of one run.
func junitSuite(r junitRun) jSuite {
	mt := r.meta
	s := jSuite{Name: mt.Scenario, Time: secs(mt.Duration)}
	if r.bySeed {
		s.Name = fmt.Sprintf("%s seed %d", mt.Scenario, mt.Seed)
	}
	if !mt.StartedAt.IsZero() {
		s.Timestamp = mt.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	s.Properties = []jProperty{
		{"system", mt.System}, {"seed", fmt.Sprint(mt.Seed)}, {"backend", mt.Backend},
		{"instances", fmt.Sprint(mt.Instances)}, {"endpoints", fmt.Sprint(mt.Endpoints)},
		{"time_scale", fmt.Sprint(mt.TimeScale)}, {"command", mt.Command},
	}
	if mt.Interrupted {
		s.Properties = append(s.Properties, jProperty{"interrupted", "true"})
	}
	if Inconclusive(r.rep, r.expect) {
		s.Properties = append(s.Properties, jProperty{"inconclusive", "true"})
	}
	if mt.Lag != nil {
		s.Properties = append(s.Properties, jProperty{"harness_lag_max", max(mt.Lag.Canary.Max, mt.Lag.Sched.Max).String()},
			jProperty{"backend_ping_max", mt.Lag.Ping.Max.String()})
	}
	class := mt.Scenario
	if r.bySeed {
		class = fmt.Sprintf("%s.seed-%d", mt.Scenario, mt.Seed)
	}
	if mt.Suite != "" {
		class = mt.Suite + "." + class
	}
	seen := map[string]bool{}
	for _, res := range r.rep.Results {
		seen[res.Invariant] = true
		c := jCase{Name: res.Invariant, Classname: class, Time: secs(res.Duration)}
		switch st := statusOf(res, r.expect); st {
		case stSkipped:
			c.Skipped = &jMsg{Message: roundDurations(res.Message)}
			s.Skipped++
		case stExpected:
			c.SystemOut = "violated, as the scenario expects: " + roundDurations(res.Message)
		case stCaught:
			c.SystemOut = "caught (safe): outside the system's assumptions and stopped before the resource: " + roundDurations(res.Message)
		case stViolated:
			c.Failure = &jMsg{Message: oneLine(roundDurations(res.Message), 300), Type: "violated", Body: violationList(res, mt.Command)}
			s.Failures++
		case stMissed:
			c.Failure = &jMsg{Message: fmt.Sprintf("expected %s to be violated, but it was %s: %s", res.Invariant, res.Outcome, oneLine(roundDurations(res.Message), 240)),
				Type: "expectation", Body: "replay: " + mt.Command}
			s.Failures++
		case stInconclusive:
			c.Skipped = &jMsg{Message: "inconclusive: " + oneLine(inconclusiveLag(res)+roundDurations(res.Message), 400)}
			s.Skipped++
		case stUnknown:
			c.Error = &jMsg{Message: oneLine(roundDurations(res.Message), 300), Type: string(res.Outcome), Body: "replay: " + mt.Command}
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	for _, inv := range r.expect.Violated {
		if !seen[inv] && !slices.ContainsFunc(s.Cases, func(c jCase) bool { return c.Name == inv }) {
			s.Cases = append(s.Cases, jCase{Name: inv, Classname: class, Time: secs(0),
				Failure: &jMsg{Message: "expected " + inv + " to be violated, but the checker reported no result for it", Type: "expectation"}})
			s.Failures++
		}
	}
	s.Tests = len(s.Cases)
	return s
}

// violationList is a failure's body: the violations, then the replay command.
func violationList(res checker.Result, command string) string {
	var b strings.Builder
	for i, v := range res.Violations {
		if i == 20 {
			fmt.Fprintf(&b, "… and %d more\n", len(res.Violations)-i)
			break
		}
		fmt.Fprintf(&b, "%s", fmtAt(v.At))
		if v.Endpoint != "" {
			fmt.Fprintf(&b, " %s", v.Endpoint)
		}
		if len(v.Instances) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(v.Instances, ", "))
		}
		fmt.Fprintf(&b, ": %s\n", oneLine(roundDurations(v.Message), 300))
	}
	if res.Truncated > 0 {
		fmt.Fprintf(&b, "(%d more not listed)\n", res.Truncated)
	}
	if command != "" {
		fmt.Fprintf(&b, "replay: %s\n", command)
	}
	return b.String()
}

// inconclusiveLag names the worst lag an inconclusive result's findings coincided with ("" for none).
func inconclusiveLag(res checker.Result) string {
	var worst *checker.LagFinding
	for _, v := range res.Inconclusive {
		if v.Lag != nil && (worst == nil || v.Lag.Max > worst.Max) {
			worst = v.Lag
		}
	}
	if worst == nil {
		return ""
	}
	return worst.String() + "; "
}
