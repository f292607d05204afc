package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tenurelabs/tenure/deploy"
)

// ErrNotSharded is wrapped by the cluster faults on a backend that is not a Redis Cluster.
var ErrNotSharded = fmt.Errorf("%w: the fault needs a Redis Cluster (--redis cluster)", ErrUnsupported)

// sharded returns the env's backend when it is a Redis Cluster, whose shards each have a primary and a
// replica that the cluster promotes on its own. The faults of a cluster name a shard by an endpoint:
// the shard serving the hash slot of the key the endpoint's lease is kept in (see LeaseKeys).
func sharded(env Env) (Backend, error) {
	d := env.Backend()
	if d == nil || d.About().Topology != deploy.TopologyCluster {
		return nil, ErrNotSharded
	}
	return d, nil
}

// ShardPrimaryKill kills the primary of the shard serving endpoint Of with SIGKILL, as a crashed host:
// whatever it acknowledged and had not yet sent its replica is gone, and the replica is promoted once
// the other primaries agree the node failed. The node stays down. The fault records the killed
// primary's slot ranges (parameter "slots"), so the checker can tell the endpoints it touched from
// those it spared.
type ShardPrimaryKill struct {
	Of string `json:"of"`
}

// Name implements Fault.
func (ShardPrimaryKill) Name() string { return "shard-primary-kill" }

// Apply implements Fault.
func (f ShardPrimaryKill) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	if _, err := sharded(env); err != nil {
		return nil, Applied{}, err
	}
	_, p, err := onPrimary(ctx, env, leaseKey(env, f.Of), func(d Backend, p deploy.Serving) (func(context.Context) error, error) {
		return nil, d.Kill(ctx, p.Node)
	})
	if err != nil && p.Node == "" {
		return nil, Applied{Params: map[string]string{"of": f.Of}}, fmt.Errorf("shard-primary-kill: the primary serving %s: %w", f.Of, err)
	}
	params := map[string]string{"of": f.Of, "node": p.Node, "slot": strconv.Itoa(p.Slot)}
	if p.Slots != "" {
		params["slots"] = p.Slots
	}
	return nil, Applied{Params: params}, err
}

// SlotMigration moves the hash slot of endpoint Of to another shard while its lease is held and
// renewed, as an operator's resharding does: the slot's keys are migrated one at a time, Pause apart,
// so clients meet ASK redirects while it is half moved; then every primary is told its new owner.
type SlotMigration struct {
	Of    string        `json:"of"`
	Pause time.Duration `json:"pause,omitempty"`
}

// Name implements Fault.
func (SlotMigration) Name() string { return "slot-migration" }

// Scaled implements Scaler.
func (f SlotMigration) Scaled(by float64) Fault {
	f.Pause = time.Duration(float64(f.Pause) * by)
	return f
}

// MarshalJSON writes the pause as text ("500ms").
func (f SlotMigration) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"of": f.Of, "pause": ms(f.Pause)})
}

// Apply implements Fault.
func (f SlotMigration) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	d, err := sharded(env)
	if err != nil {
		return nil, Applied{}, err
	}
	m, err := d.Migrate(ctx, leaseKey(env, f.Of), f.Pause)
	// Only the moved slot's keys change hands: "slots" names it alone.
	return nil, Applied{Params: map[string]string{"of": f.Of, "from": m.From, "to": m.To, "slot": strconv.Itoa(m.Slot), "slots": strconv.Itoa(m.Slot), "pause": ms(f.Pause)}}, err
}
