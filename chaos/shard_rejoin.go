package chaos

import (
	"context"
	"fmt"
	"strings"
)

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
	d, err := sharded(env)
	if err != nil {
		return nil, Applied{}, err
	}
	nodes, err := d.StartKilled(ctx)
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
