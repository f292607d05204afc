package reference

import (
	"github.com/tenurelabs/tenure/internal/mutation"
	"github.com/tenurelabs/tenure/sim"
)

// LeaseMutants are the reference's safety mechanisms that the checker-power tests remove one at a
// time. Each is registered as the hidden system "mutant-<name>": the reference with that one mechanism
// switched off (lease.Config.Mutations), run like any system with --system.
var LeaseMutants = []mutation.Name{
	mutation.NoDeadline,
	mutation.RenewGetThenExpire,
	mutation.RenewUnconditional,
	mutation.ReleaseUnchecked,
	mutation.NoGuard,
	mutation.NotFailClosed,
	mutation.TokenReset,
	mutation.DriftIgnored,
	mutation.DeadlineFromReply,
	mutation.NoLinkHealth,
	mutation.ReleaseBeforePoll,
	mutation.ProcessIdentity,
	mutation.PlainRendezvous,
	mutation.AcquireNotIdempotent,
	mutation.TimeoutAsSuccess,
	mutation.StopAfterCancelAbandons,
	mutation.StopHeartbeatRewrite,
	mutation.StopDuringStartUnguarded,
}

func init() {
	for _, n := range LeaseMutants {
		sim.RegisterHidden(MutantSystemName(n), func() sim.System { return NewMutant(n) })
	}
}

// MutantSystemName is the registered name of the reference without mechanism n.
func MutantSystemName(n mutation.Name) string { return "mutant-" + string(n) }

// NewMutant returns the reference system with mechanism n removed. It classifies commands like the
// reference: the mutants' scripts keep the reference's conventions, and their plain commands (GET,
// PEXPIRE, DEL) are left to the built-in classifier.
func NewMutant(n mutation.Name) Reference {
	return Reference{name: MutantSystemName(n), mutations: mutation.Of(n)}
}
