//go:build tenure_mutants

package election

import (
	"context"
	"fmt"

	"github.com/tenurelabs/tenure/internal/mutation"
)

// The elector's mutants: the points of mechanisms.go, each consulting the set of mechanisms switched
// off (docs/mutants.md). This file exists only in a build with the tenure_mutants tag.

// variant is the set of mechanisms switched off.
type variant struct{ off mutation.Set }

// WithMutants returns cfg with the named mechanisms switched off. Each must be one of the election's
// mutants in mutation.Mutants.
func WithMutants(cfg Config, names ...mutation.Name) Config {
	for _, n := range names {
		if mu, ok := mutation.Lookup(n); !ok || mu.Of != mutation.Election {
			panic(fmt.Sprintf("election: %q is not a mutant of the election (see mutation.Mutants)", n))
		}
	}
	cfg.variant = variant{off: mutation.Of(names...)}
	return cfg
}

func (k *keeper) without(n mutation.Name) bool  { return k.cfg.variant.off.Has(n) }
func (e *Elector) without(n mutation.Name) bool { return e.cfg.variant.off.Has(n) }

// cancelsAtDeadline: election-no-cancel's leader acts on past its deadline, until a renewal fails.
func (k *keeper) cancelsAtDeadline() bool { return !k.without(mutation.ElectionNoCancel) }

// renewedTerm: election-term-unchecked renews whatever holding the instance has, as a renewal that
// compares only the instance would.
func (k *keeper) renewedTerm(ctx context.Context) uint64 {
	if k.without(mutation.ElectionTermUnchecked) {
		if info, err := k.b.Leader(ctx, k.cfg.Role); err == nil && info.ID == k.cfg.InstanceID {
			return info.Term
		}
	}
	return k.term
}

// releasesLeftover: election-stop-after-cancel-abandons's Stop after Start's context ended releases
// nothing, as before the elector kept what the context left held.
func (e *Elector) releasesLeftover() bool {
	return !e.without(mutation.ElectionStopAfterCancelAbandons)
}

// releasesAbandoned: election-abandoned-term-kept leaves a term of its own that it does not lead (a lost
// acquire or renewal that landed) to expire, refused by it like everyone else until then.
func (e *Elector) releasesAbandoned() bool { return !e.without(mutation.ElectionAbandonedTermKept) }
