package simcli

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tenurelabs/tenure/sim"
)

// chooseSystem resolves --system (a registered name, or exec:PATH for a system file) or --exec (a
// process system given by its command line), refusing both at once and --kind without --exec.
func (f *runFlags) chooseSystem() (sim.System, error) {
	switch {
	case f.set["exec"] && f.set["system"]:
		return nil, fmt.Errorf("%w: give --system or --exec, not both: --exec is a system of its own", errUsage)
	case f.set["kind"] && !f.set["exec"]:
		return nil, fmt.Errorf("%w: --kind applies only to --exec (a system file says its kind, a registered system knows its own): leave it out", errUsage)
	case f.set["exec"]:
		if f.kind != "" && f.kind != "lease" && f.kind != "election" {
			return nil, fmt.Errorf("%w: --kind %q: want lease or election", errUsage, f.kind)
		}
		ps, err := sim.NewExecSystem(f.exec, f.kind)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		f.system = ps.Name()
		return ps, nil
	}
	if err := checkSystemName(f.system); err != nil {
		return nil, err
	}
	s, err := sim.Lookup(f.system)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return s, nil
}

// systemArg is how a replay line names the system the flags chose.
func (f *runFlags) systemArg() string {
	if f.set["exec"] {
		s, err := sim.NewExecSystem(f.exec, f.kind)
		if err == nil {
			return s.Ref()
		}
	}
	return "--system " + f.system
}

// systemArg is how a replay line names a system: --system NAME, --system exec:PATH or --exec 'CMD'.
func systemArg(s sim.System) string {
	ps, ok := s.(*sim.ProcessSystem)
	switch {
	case !ok:
		return "--system " + s.Name()
	case strings.HasPrefix(ps.Ref(), "--"):
		return ps.Ref()
	}
	return "--system " + ps.Ref()
}

// exampleSystems are the process systems whose files lie under examples/ of the current directory
// (examples/*/system.json), as exec:PATH names, sorted.
func exampleSystems() []string {
	files, _ := filepath.Glob(filepath.Join("examples", "*", sim.SystemFileName))
	var names []string
	for _, f := range files {
		names = append(names, sim.ExecPrefix+filepath.Dir(f))
	}
	sort.Strings(names)
	return names
}

// listExamples adds the example process systems to simrun list's table of systems; a file that does
// not load is listed with what is wrong with it.
func listExamples(w io.Writer) {
	for _, n := range exampleSystems() {
		s, err := sim.Lookup(n)
		if err != nil {
			fmt.Fprintf(w, "%s\t-\t(cannot be run: %v)\n", n, err)
			continue
		}
		desc := "-"
		if d, ok := s.(sim.Describer); ok {
			desc = d.Description()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", n, kindOf(s), desc)
	}
}
