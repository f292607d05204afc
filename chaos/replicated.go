package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Replicated is an optional capability of a Backend: a primary with replicas under automatic failover
// (a Sentinel set). Nodes are named ("redis-0"); each has a peer link, the proxy its replicas and the
// sentinels reach it through, which no instance uses.
type Replicated interface {
	// Primary names the node the failover mechanism currently holds to be the primary.
	Primary(ctx context.Context) (string, error)
	// DataNodes names every data node, in a fixed order.
	DataNodes() []string
	// KillNode kills a node's process (SIGKILL).
	KillNode(name string) error
	// PeerLink is the link a node's peers reach it through.
	PeerLink(name string) (Link, error)
	// Failover asks the failover mechanism for a graceful promotion (SENTINEL FAILOVER).
	Failover(ctx context.Context) error
}

// ErrNotReplicated is wrapped by the replicated-backend faults on a backend without replicas.
var ErrNotReplicated = fmt.Errorf("%w: the fault needs a primary with replicas under failover (--redis sentinel)", ErrUnsupported)

func replicated(env Env) (Replicated, error) {
	r, ok := env.Backend().(Replicated)
	if !ok {
		return nil, ErrNotReplicated
	}
	return r, nil
}

// PrimaryKill kills the current primary with SIGKILL, as a crashed host: whatever it acknowledged and
// had not yet sent its replicas is gone, and the sentinels promote a replica once they agree it is down.
// The node stays down.
//
// What the primary had already written to its peer link still reaches the replicas after the kill: a
// proxy that delays the stream (ReplicationLatency) holds it and delivers it late, as a network
// delivers what is already on the wire. With DropInFlight the primary's peer link is killed at the same
// instant, closing every connection through it, so what the proxy holds is lost with the host: the
// replicas then miss every write of the last stretch of the delay, which is what a lagging replica
// promoted after a crash misses.
type PrimaryKill struct {
	DropInFlight bool `json:"drop_in_flight,omitempty"`
}

// Name implements Fault.
func (PrimaryKill) Name() string { return "primary-kill" }

// Apply implements Fault.
func (f PrimaryKill) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	r, err := replicated(env)
	if err != nil {
		return nil, Applied{}, err
	}
	p, err := r.Primary(ctx)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Params: map[string]string{"node": p}}
	if f.DropInFlight {
		a.Params["in_flight"] = "dropped"
		l, err := r.PeerLink(p)
		if err != nil {
			return nil, a, err
		}
		// The link first: a write the primary acknowledges in between is lost as well, as it would be a
		// moment later.
		if err := l.Kill(); err != nil {
			return nil, a, err
		}
	}
	return nil, a, r.KillNode(p)
}

// PrimaryIsolate cuts the current primary's peer link both ways for the step's duration: its replicas
// and the sentinels lose it, while every instance still reaches it through its own links. For a while
// there are two primaries; what the old one acknowledges meanwhile is discarded when it rejoins as a
// replica of the new one.
type PrimaryIsolate struct{}

// Name implements Fault.
func (PrimaryIsolate) Name() string { return "primary-isolate" }

// Apply implements Fault.
func (PrimaryIsolate) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	r, err := replicated(env)
	if err != nil {
		return nil, Applied{}, err
	}
	p, err := r.Primary(ctx)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Params: map[string]string{"node": p}}
	l, err := r.PeerLink(p)
	if err != nil {
		return nil, a, err
	}
	return func(context.Context) error { return l.Heal() }, a, l.Partition()
}

// ReplicationLatency slows the peer link of every data node by Latency ± Jitter per round trip:
// replication (each replica reads its stream through the primary's peer link) falls behind by about
// half that, and so do the sentinels' pings of the nodes, which must stay well below their down-after
// time.
type ReplicationLatency struct {
	Latency time.Duration `json:"latency"`
	Jitter  time.Duration `json:"jitter,omitempty"`
}

// Name implements Fault.
func (ReplicationLatency) Name() string { return "replication-latency" }

// Scaled implements Scaler.
func (f ReplicationLatency) Scaled(by float64) Fault {
	f.Latency = time.Duration(float64(f.Latency) * by)
	f.Jitter = time.Duration(float64(f.Jitter) * by)
	return f
}

// MarshalJSON writes durations as text ("600ms").
func (f ReplicationLatency) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"latency": ms(f.Latency), "jitter": ms(f.Jitter)})
}

// Apply implements Fault.
func (f ReplicationLatency) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	r, err := replicated(env)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Params: map[string]string{"latency": ms(f.Latency), "jitter": ms(f.Jitter)}}
	var links []Link
	for _, n := range r.DataNodes() {
		l, err := r.PeerLink(n)
		if err != nil {
			return healAll(links), a, err
		}
		links = append(links, l)
	}
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Latency(f.Latency, f.Jitter))
	}
	return healAll(links), a, errors.Join(errs...)
}

// ManualFailover asks the sentinels for a graceful failover (SENTINEL FAILOVER): the primary is
// demoted and a replica promoted without either being down. Sentinel promotes the replica without
// first stopping writes on the old primary, so a write the old primary acknowledges before it is
// reconfigured as a replica can be lost.
type ManualFailover struct{}

// Name implements Fault.
func (ManualFailover) Name() string { return "sentinel-failover" }

// Apply implements Fault.
func (ManualFailover) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	r, err := replicated(env)
	if err != nil {
		return nil, Applied{}, err
	}
	p, err := r.Primary(ctx)
	if err != nil {
		return nil, Applied{}, err
	}
	return nil, Applied{Params: map[string]string{"node": p}}, r.Failover(ctx)
}
