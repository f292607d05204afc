package sim

import (
	"time"

	"github.com/tenurelabs/tenure/checker"
)

// Promises is what a system promises beyond safety. Safety (one holder and one poller at a time, polls
// inside their leases, a linearizable history, no stale belief, no blind write) is judged for every
// system; what a system does not promise is judged and shown too, as "not promised", and a run's exit
// status does not count it. A lock library that leaves spreading work to its user does not promise
// balance; one that hands out no tokens does not promise fencing; one that looks for free locks on a
// tick does not promise the specification's failover bound. A field left out is promised.
type Promises struct {
	// Balance: in steady windows every instance holds an even share of the endpoints, ±1.
	Balance *bool `json:"balance,omitempty"`
	// Fencing: tokens (or terms) handed to the resource never go backwards.
	Fencing *bool `json:"fencing,omitempty"`
	// Failover: a failed holder's endpoints are polled again within the bound the checker derives from
	// the specification's timing (the TTL, the detection latency, the faults' physical limits).
	Failover *bool `json:"failover,omitempty"`
	// Tick names the harness's interval at which the system looks for free endpoints, when it looks
	// on a tick rather than at a key's expiry or a release: "discovery" or "renewal". A takeover may
	// then wait a tick after the key expires; a late failover within it is reported so, with the bound
	// the system's own intervals imply beside the specification's (which still decides).
	Tick string `json:"tick,omitempty"`
}

// Ticks are the names Promises.Tick accepts.
var Ticks = []string{"discovery", "renewal"}

// tickOf is the interval p.Tick names, at timing t; zero when it names none.
func (p Promises) tickOf(t Timing) time.Duration {
	switch p.Tick {
	case "discovery":
		return t.DiscoveryInterval
	case "renewal":
		return t.RenewInterval
	}
	return 0
}

// Promiser is an optional interface of a System: what it promises. A System that is not a Promiser
// promises everything.
type Promiser interface {
	Promises() Promises
}

// NotPromised returns the checker's names of the invariants p does not promise.
func (p Promises) NotPromised() []string {
	var out []string
	if p.Balance != nil && !*p.Balance {
		out = append(out, checker.InvBalance)
	}
	if p.Fencing != nil && !*p.Fencing {
		out = append(out, checker.InvFencing)
	}
	if p.Failover != nil && !*p.Failover {
		out = append(out, checker.InvFailover)
	}
	return out
}

// tickOf returns the interval at which system s says it looks for free endpoints, at timing t.
func tickOf(s System, t Timing) time.Duration {
	if p, ok := s.(Promiser); ok {
		return p.Promises().tickOf(t)
	}
	return 0
}

// notPromisedBy returns what system s does not promise.
func notPromisedBy(s System) []string {
	if p, ok := s.(Promiser); ok {
		return p.Promises().NotPromised()
	}
	return nil
}
