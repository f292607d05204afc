package simcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/scenarios"
	"github.com/tenurelabs/tenure/sim"
)

const runHelp = `Usage: simrun run SCENARIO... [flags]
       simrun run --suite NAME [flags]

Runs each scenario against a fresh backend, checks the recorded history and writes its reports.
Exit status: 0 every invariant held, 1 one was violated or undecided, 2 usage or setup error,
3 inconclusive: nothing was violated, but a timing verdict coincided with the harness's own lag (the
machine was too loaded to judge it; --rerun-inconclusive runs such a scenario again), 130 interrupted.

Flags:
`

const reportHelp = `Usage: simrun report DIR

Re-checks saved runs and renders their reports again. DIR is a directory simrun wrote: one run (it
holds history.jsonl), or a suite, a matrix or a bench (its .tenure.json marker names its runs; the index,
and a matrix's table, are rendered again too). report acts on DIR alone: it never looks for runs in
other directories below it. A run written before markers is recognised by a history.jsonl with nothing
beside it but the files a run writes. history.jsonl is read, never rewritten.
Exit status: 0 every run held every invariant (a matrix: every cell came out as expected), 1 one did not
(a matrix: a cell is unexpected), 3 none did not but one is inconclusive (the harness ran too late to
judge a timing verdict; a matrix: a reference system's or a characteristic cell, as 'simrun matrix'
says), 2 usage error or DIR is not a directory simrun wrote.
`

const listHelp = `Usage: simrun list

Lists the scenarios with their fleet and description, the suites, and the systems with their kind and
description.
`

// printFlags prints the flags of fs, spelled as they are given on the command line.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		arg := " VALUE"
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			arg = ""
		}
		usage := f.Usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  --%s%s\t%s\n", f.Name, arg, usage)
	})
	_ = tw.Flush()
}

// isHelp reports whether args ask for help.
func isHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "help":
			return true
		}
	}
	return false
}

// flagError turns the flag package's complaint into one line that names the flag and the fix.
func flagError(cmd string, fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var known []string
		fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
		hint := ""
		if s := suggest(name, known); s != "" {
			hint = ": did you mean --" + strings.ReplaceAll(s, " or ", " or --") + "?"
		}
		return fmt.Errorf("%w: unknown flag --%s for %s%s (simrun %s --help lists the flags)", errUsage, name, cmd, hint, cmd)
	}
	if rest, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("%w: --%s needs a value (simrun %s --help says which)", errUsage, rest, cmd)
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		// invalid value "x" for flag -name: reason
		if v, after, ok := strings.Cut(rest, " for flag -"); ok {
			if name, reason, ok := strings.Cut(after, ": "); ok {
				if reason == "parse error" || reason == "value out of range" {
					reason = wantOf(fs.Lookup(name), v)
				}
				return fmt.Errorf("%w: --%s %s: %s", errUsage, name, v, reason)
			}
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		// invalid boolean value "x" for -name: parse error
		if v, after, ok := strings.Cut(rest, " for -"); ok {
			name, _, _ := strings.Cut(after, ":")
			return fmt.Errorf("%w: --%s=%s: a switch is given alone (--%s) or as --%s=true or --%s=false", errUsage, name, strings.Trim(v, `"`), name, name, name)
		}
	}
	return fmt.Errorf("%w: %v (simrun %s --help lists the flags)", errUsage, err, cmd)
}

// wantOf says what flag f wants, for a value v the flag package could not parse ("parse error" says
// nothing of it).
func wantOf(f *flag.Flag, v string) string {
	var got any
	if f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			got = g.Get()
		}
	}
	switch got.(type) {
	case int, int64:
		return "want a whole number, got " + v
	case uint, uint64:
		return "want a whole number of at least 0, got " + v
	case float64:
		return "want a number, got " + v
	case time.Duration:
		return "want a duration such as 90s, 10m or 1h30m, got " + v
	}
	return "cannot read " + v
}

// unknownName is the error for a name that is not among known: the closest ones, on one line.
func unknownName(what, name string, known []string, listHint string) error {
	if s := suggest(name, known); s != "" {
		return fmt.Errorf("%w: unknown %s %q: did you mean %s? (%s)", errUsage, what, name, s, listHint)
	}
	return fmt.Errorf("%w: unknown %s %q (%s)", errUsage, what, name, listHint)
}

// checkScenarioName refuses a name that is not a scenario, suggesting the closest.
func checkScenarioName(name string) error {
	if _, err := scenarios.Get(name); err == nil {
		return nil
	}
	return unknownName("scenario", name, scenarios.Names(), "simrun list shows them all")
}

// suiteNames lists the registered suites, as "a, b or c".
func suiteNames() string {
	var names []string
	for _, su := range scenarios.Suites() {
		names = append(names, su.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// checkSuiteName refuses a name that is not a suite, suggesting the closest.
func checkSuiteName(name string) error {
	if _, err := scenarios.GetSuite(name); err == nil {
		return nil
	}
	var names []string
	for _, su := range scenarios.Suites() {
		names = append(names, su.Name)
	}
	return unknownName("suite", name, names, "valid suites: "+strings.Join(names, ", "))
}

// checkSystemName refuses a name that is not a registered system, suggesting the closest.
func checkSystemName(name string) error {
	_, err := sim.Lookup(name)
	switch {
	case err == nil:
		return nil
	case strings.HasPrefix(name, sim.ExecPrefix):
		return fmt.Errorf("%w: %v", errUsage, err) // a system file's own trouble, said by the file
	}
	if why, ok := sim.Absent(name); ok {
		return fmt.Errorf("%w: unknown system %q: %s", errUsage, name, why)
	}
	known := sim.Systems()
	hint := "known: " + strings.Join(known, ", ")
	if len(hint) > 60 {
		hint = "simrun list shows them all"
	}
	return unknownName("system", name, known, hint)
}

// backendNames are the --redis values a typo is matched against (addr=HOST:PORT aside); those this
// build's package deploy does not accept are left out.
var backendNames = []string{"auto", "server", "embedded", "server:rdb", "server:aof", "sentinel", "independent", "cluster", "container"}

// checkBackend refuses a --redis value package deploy does not accept, suggesting the closest name for a typo.
func checkBackend(spec string) error {
	err := deploy.CheckSpec(spec)
	if err == nil {
		return nil
	}
	if !errors.Is(err, deploy.ErrSpec) {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var known []string
	for _, n := range backendNames {
		if deploy.CheckSpec(n) == nil {
			known = append(known, n)
		}
	}
	return unknownName("backend --redis", spec, known, "valid: "+strings.Join(known, ", ")+" or addr=HOST:PORT")
}

// suggest returns the names of known closest to name (at most three, comma-separated), or "" when
// none is close enough to be a typo of it.
func suggest(name string, known []string) string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	limit := len(name)/3 + 1
	if limit > 4 {
		limit = 4
	}
	for _, k := range known {
		d := editDistance(name, k)
		if d <= limit || (len(name) >= 4 && strings.Contains(k, name)) {
			cs = append(cs, cand{k, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	if len(cs) > 3 {
		cs = cs[:3]
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.s)
	}
	if len(out) > 1 {
		return strings.Join(out[:len(out)-1], ", ") + " or " + out[len(out)-1]
	}
	return strings.Join(out, "")
}

// editDistance is the Levenshtein distance between a and b, counting an adjacent swap as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// program is how the running binary was invoked, for replay commands: a custom simrun built with
// simcli replays with itself.
func program() string {
	if len(os.Args) > 0 && os.Args[0] != "" {
		return os.Args[0]
	}
	return "simrun"
}
