package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenurelabs/tenure/deploy"
)

// The faults of a primary with replicas under automatic failover (a Sentinel set). Nodes are named
// ("redis-0"); each has a peer link, the proxy its replicas and the sentinels reach it through, which no
// instance uses.

// ErrNotReplicated is wrapped by the replicated-backend faults on a backend without replicas.
var ErrNotReplicated = fmt.Errorf("%w: the fault needs a primary with replicas under failover (--redis sentinel)", ErrUnsupported)

// onSetPrimary is the shape of PrimaryKill, PrimaryIsolate and ManualFailover: on a Sentinel set, the
// primary the sentinels name now is recorded as the fault's "node" and act does the fault to it.
func onSetPrimary(ctx context.Context, env Env, act func(d Backend, node string, a Applied) (func(context.Context) error, error)) (func(context.Context) error, Applied, error) {
	if d := env.Backend(); d == nil || d.About().Topology != deploy.TopologySentinel {
		return nil, Applied{}, ErrNotReplicated
	}
	var a Applied
	end, _, err := onPrimary(ctx, env, "", func(d Backend, p deploy.Serving) (func(context.Context) error, error) {
		a = Applied{Params: map[string]string{"node": p.Node}}
		return act(d, p.Node, a)
	})
	return end, a, err
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
	return onSetPrimary(ctx, env, func(d Backend, node string, a Applied) (func(context.Context) error, error) {
		if f.DropInFlight {
			a.Params["in_flight"] = "dropped"
			l, err := d.PeerLink(node)
			if err != nil {
				return nil, err
			}
			// The link first: a write the primary acknowledges in between is lost as well, as it would
			// be a moment later.
			if err := l.Kill(); err != nil {
				return nil, err
			}
		}
		return nil, d.Kill(ctx, node)
	})
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
	return onSetPrimary(ctx, env, func(d Backend, node string, _ Applied) (func(context.Context) error, error) {
		l, err := d.PeerLink(node)
		if err != nil {
			return nil, err
		}
		return func(context.Context) error { return l.Heal() }, l.Partition()
	})
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
	return onSetPrimary(ctx, env, func(d Backend, _ string, _ Applied) (func(context.Context) error, error) {
		return nil, d.Promote(ctx)
	})
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
	d := env.Backend()
	if d == nil || d.About().Topology != deploy.TopologySentinel {
		return nil, Applied{}, ErrNotReplicated
	}
	a := Applied{Params: map[string]string{"latency": ms(f.Latency), "jitter": ms(f.Jitter)}}
	var links []deploy.Link
	heal := func(context.Context) error {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Heal())
		}
		return errors.Join(errs...)
	}
	for _, n := range d.Nodes() {
		if n.Sentinel {
			continue
		}
		l, err := d.PeerLink(n.Name)
		if err != nil {
			return heal, a, err
		}
		links = append(links, l)
	}
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Latency(f.Latency, f.Jitter))
	}
	return heal, a, errors.Join(errs...)
}
