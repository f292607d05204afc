package reference

import (
	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/sim"
)

// Election mutants: the reference election on Redis with one safety mechanism removed, for the
// checker-power tests. Each is built exactly as election-redis, plus its mutation.
func init() {
	for name, m := range map[string]mutation.Name{
		"mutant-election-term-unchecked": mutation.ElectionTermUnchecked, // renew compares the instance, not the holding
		"mutant-election-no-cancel":      mutation.ElectionNoCancel,      // the leader context outlives the local deadline
		// Stop after a cancelled Start context releases nothing
		"mutant-election-stop-after-cancel-abandons": mutation.ElectionStopAfterCancelAbandons,
	} {
		sys := Election{mutant: name, mutations: mutation.Of(m)}
		sim.RegisterHidden(name, func() sim.System { return sys })
	}
}
