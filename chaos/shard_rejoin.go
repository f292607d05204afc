package chaos

import (
	"context"
	"fmt"
	"strings"
)

// ShardRejoiner is an optional capability of a Sharded backend: the cluster nodes a fault killed can
// be started again, and rejoin.
type ShardRejoiner interface {
	// RestartKilledNodes starts every node of the cluster whose process a fault killed, each from its
	// own cluster configuration file and with no data, and returns once each has rejoined (the cluster
	// is whole again), naming what each became.
	RestartKilledNodes(ctx context.Context) ([]Rejoined, error)
}

// Rejoined is a node started again by RestartKilledNodes, and what the cluster made of it.
type Rejoined struct {
	// Node is the node's name ("redis-0").
	Node string
	// Role is "replica" or "primary".
	Role string
	// Of names the primary a replica copies ("" for a primary).
	Of string
}

func (r Rejoined) String() string {
	if r.Of != "" {
		return fmt.Sprintf("%s: %s of %s", r.Node, r.Role, r.Of)
	}
	return r.Node + ": " + r.Role
}

// ShardNodeRestart starts again every cluster node a fault killed (shard-primary-kill, or the
// single-node redis-restart acting on a cluster), as an operator brings a crashed host back: the node
// reads its nodes.conf, learns that its replica took its slots, and rejoins as that node's replica,
// copying its dataset. The step ends once every such node has rejoined and the cluster is whole (every
// slot served, every primary with a connected replica); it fails, and the verdict is unknown, when a
// node does not rejoin.
type ShardNodeRestart struct{}

// Name implements Fault.
func (ShardNodeRestart) Name() string { return "shard-node-restart" }

// Apply implements Fault.
func (ShardNodeRestart) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	if _, err := sharded(env); err != nil {
		return nil, Applied{}, err
	}
	r, ok := env.Backend().(ShardRejoiner)
	if !ok {
		return nil, Applied{}, fmt.Errorf("%w: the backend cannot start its cluster nodes again", ErrUnsupported)
	}
	nodes, err := r.RestartKilledNodes(ctx)
	var s []string
	for _, n := range nodes {
		s = append(s, n.String())
	}
	a := Applied{Params: map[string]string{"nodes": strings.Join(s, ", ")}}
	if err == nil && len(nodes) == 0 {
		err = fmt.Errorf("chaos: shard-node-restart found no killed cluster node to start (schedule it after a shard-primary-kill)")
	}
	return nil, a, err
}
