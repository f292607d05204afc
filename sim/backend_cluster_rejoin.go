package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenurelabs/tenure/chaos"
)

var _ chaos.ShardRejoiner = (*clusterBackend)(nil)

// RestartKilledNodes implements chaos.ShardRejoiner: every node whose process is down is started again
// from its nodes.conf, empty, and waited for until it has rejoined (deploy.Cluster.RestartNode).
func (b *clusterBackend) RestartKilledNodes(ctx context.Context) ([]chaos.Rejoined, error) {
	var out []chaos.Rejoined
	var errs []error
	for _, n := range b.c.Killed() {
		role, of, err := b.c.RestartNode(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := chaos.Rejoined{Node: n.Name, Role: "primary"}
		if role == "slave" {
			r.Role = "replica"
			if of != nil {
				r.Of = of.Name
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// startKilled starts every killed node again and waits until each has rejoined: Start on the cluster.
func (b *clusterBackend) startKilled() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.RestartKilledNodes(ctx); err != nil {
		return fmt.Errorf("sim: start the killed cluster nodes again: %w", err)
	}
	return nil
}
