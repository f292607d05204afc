package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Sharded is an optional capability of a Backend: a Redis Cluster, whose shards each have a primary
// and a replica that the cluster promotes on its own. Faults name a shard by an endpoint: the shard
// serving the hash slot of the endpoint's keys.
type Sharded interface {
	// KillShardPrimary kills (SIGKILL) the primary serving endpoint's slot, and returns its name and
	// the slot. The cluster promotes its replica once it has been unreachable for cluster-node-timeout.
	KillShardPrimary(ctx context.Context, endpoint string) (node string, slot int, err error)
	// MigrateEndpoint moves endpoint's slot to another primary, waiting pause between its keys, and
	// returns the source, the target and the slot. It returns once the slot is moved.
	MigrateEndpoint(ctx context.Context, endpoint string, pause time.Duration) (from, to string, slot int, err error)
}

// ShardSlots is an optional capability of a Sharded backend: the hash slots served by the primary
// that serves endpoint's slot, as comma-separated inclusive ranges ("10923-16383"). A fault that
// kills that primary records them (parameter "slots"), so the checker can tell the endpoints it
// touched from those it spared.
type ShardSlots interface {
	PrimarySlots(ctx context.Context, endpoint string) (string, error)
}

// ErrNotSharded is wrapped by the cluster faults on a backend that is not a Redis Cluster.
var ErrNotSharded = fmt.Errorf("%w: the fault needs a Redis Cluster (--redis cluster)", ErrUnsupported)

func sharded(env Env) (Sharded, error) {
	s, ok := env.Backend().(Sharded)
	if !ok {
		return nil, ErrNotSharded
	}
	return s, nil
}

// ShardPrimaryKill kills the primary of the shard serving endpoint Of with SIGKILL, as a crashed host:
// whatever it acknowledged and had not yet sent its replica is gone, and the replica is promoted once
// the other primaries agree the node failed. The node stays down.
type ShardPrimaryKill struct {
	Of string `json:"of"`
}

// Name implements Fault.
func (ShardPrimaryKill) Name() string { return "shard-primary-kill" }

// Apply implements Fault.
func (f ShardPrimaryKill) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	s, err := sharded(env)
	if err != nil {
		return nil, Applied{}, err
	}
	var slots string
	if ss, ok := s.(ShardSlots); ok {
		if slots, err = ss.PrimarySlots(ctx, f.Of); err != nil {
			return nil, Applied{Params: map[string]string{"of": f.Of}}, fmt.Errorf("shard-primary-kill: the slots of %s's primary: %w", f.Of, err)
		}
	}
	node, slot, err := s.KillShardPrimary(ctx, f.Of)
	params := map[string]string{"of": f.Of, "node": node, "slot": strconv.Itoa(slot)}
	if slots != "" {
		params["slots"] = slots
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
	s, err := sharded(env)
	if err != nil {
		return nil, Applied{}, err
	}
	from, to, slot, err := s.MigrateEndpoint(ctx, f.Of, f.Pause)
	// Only the moved slot's keys change hands: "slots" names it alone.
	return nil, Applied{Params: map[string]string{"of": f.Of, "from": from, "to": to, "slot": strconv.Itoa(slot), "slots": strconv.Itoa(slot), "pause": ms(f.Pause)}}, err
}
