//go:build !tenure_mutants

package election

import "context"

// The elector's safety mechanisms, at the points where a build with the tenure_mutants tag can switch
// one off to show that the harness notices (mutants.go, docs/mutants.md). In this build every point is
// the reference's own behaviour and inlines into its caller.

// variant is the set of mechanisms switched off: none.
type variant struct{}

// cancelsAtDeadline reports that the leadership ends at its local deadline.
func (k *keeper) cancelsAtDeadline() bool { return true }

// renewedTerm is the term a renewal asks the backend to extend: the keeper's own.
func (k *keeper) renewedTerm(context.Context) uint64 { return k.term }

// releasesLeftover reports that a Stop after Start's context ended releases what it left held.
func (e *Elector) releasesLeftover() bool { return true }

// releasesAbandoned reports that a candidate the backend names as holder of a term it does not lead
// releases that term and contends again at once.
func (e *Elector) releasesAbandoned() bool { return true }
