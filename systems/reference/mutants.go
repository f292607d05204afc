//go:build tenure_mutants

package reference

import (
	"fmt"

	"github.com/tenurelabs/tenure/election"
	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
)

// Every mutant of mutation.Mutants is registered as the hidden system "mutant-<name>": the reference
// (or election-redis) with that one mechanism switched off, run like any system with --system. This
// file exists only in a build with the tenure_mutants tag; without it, mutants_absent.go says how to
// build one.
func init() {
	for _, mu := range mutation.Mutants {
		sim.RegisterHidden(mu.System(), func() sim.System { return NewMutant(mu.Name) })
	}
}

// NewMutant returns the system built from the reference without mechanism n: a Reference for a lease
// mutant, an Election on Redis for an election mutant. It classifies commands like the reference: the
// mutants' scripts keep the reference's conventions, and their plain commands (GET, PEXPIRE, DEL) are
// the built-in classifier's.
func NewMutant(n mutation.Name) sim.System {
	mu, ok := mutation.Lookup(n)
	if !ok {
		panic(fmt.Sprintf("reference: no mutant %q in mutation.Mutants", n))
	}
	switch mu.Of {
	case mutation.Lease:
		return Reference{name: mu.System(), vary: func(c lease.Config) lease.Config { return lease.WithMutants(c, n) }}
	case mutation.Election:
		return Election{mutant: mu.System(), vary: func(c election.Config) election.Config { return election.WithMutants(c, n) }}
	}
	panic(fmt.Sprintf("reference: mutant %q of unknown system %q", n, mu.Of))
}
