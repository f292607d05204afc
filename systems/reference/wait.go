package reference

import (
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

// WaitSystemName is the reference with lease.Config.WaitReplicas = 1: a grant or renewal counts only
// once WAIT reports it on one replica within the call's bound, and fails closed otherwise.
const WaitSystemName = "reference-wait"

// It is registered hidden (run it by name with --system) because it only makes sense on a primary with
// replicas: on a lone redis-server no WAIT is ever acknowledged, so it never holds a lease.
func init() { sim.RegisterHidden(WaitSystemName, func() sim.System { return NewReferenceWait(1) }) }

// NewReferenceWait returns the reference with WaitReplicas = replicas, named reference-wait.
func NewReferenceWait(replicas int) Reference {
	return Reference{name: WaitSystemName, wait: replicas}
}

var _ sim.WaitConfirmer = Reference{}

// ConfirmedByWait implements sim.WaitConfirmer: with WaitReplicas set, the reference counts a grant or
// a renewal only once WAIT reports it on enough replicas (lease/wait.go); its releases, including the
// release of a stale holding sent in an acquire batch, are counted whatever WAIT says.
func (r Reference) ConfirmedByWait(op history.Op) bool {
	return r.wait > 0 && (op.Kind == history.OpAcquire || op.Kind == history.OpRenew)
}
