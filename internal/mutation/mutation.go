//go:build tenure_mutants

// Package mutation names the safety mechanisms of Tenure's reference lease manager and leader election
// that the checker-power tests remove one at a time, and says how each removal is caught. A mutant is
// the reference with exactly one mechanism switched off; each must be caught by a scenario, or the
// mechanism is untested.
//
// The package, the mutants' code in lease and election, and the hidden mutant systems exist only in a
// build with the tenure_mutants tag (docs/mutants.md): the default build of the libraries carries none
// of it, and no package of the default build can import this one.
package mutation

import (
	"slices"
	"strings"
)

// Name identifies one removed mechanism.
type Name string

// Set is a set of removed mechanisms. The zero Set removes nothing.
type Set struct{ names []Name }

// Of returns the set of the given names.
func Of(names ...Name) Set {
	s := Set{names: slices.Clone(names)}
	slices.Sort(s.names)
	s.names = slices.Compact(s.names)
	return s
}

// Has reports whether n is removed.
func (s Set) Has(n Name) bool { return slices.Contains(s.names, n) }

// Empty reports whether nothing is removed.
func (s Set) Empty() bool { return len(s.names) == 0 }

// Names lists the removed mechanisms, sorted.
func (s Set) Names() []Name { return slices.Clone(s.names) }

// String lists the names, comma-separated.
func (s Set) String() string {
	parts := make([]string, len(s.names))
	for i, n := range s.names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}
