package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Restarting a killed cluster node. The node starts again on its own port, in its own directory, with
// the nodes.conf it wrote before it died (its node ID, its peers' announced addresses, the slots it
// served and the configuration epoch it served them in). It has no persistence, so it comes back with
// no keys. What it becomes is the cluster's decision, not ours:
//
//   - its replica was promoted while it was down: the promoted node claims its slots with a higher
//     configuration epoch, so on the first gossip the restarted node gives them up and turns into a
//     replica of the node that holds them, then copies that node's dataset (a full resynchronisation);
//   - it came back before anyone noticed (a restart shorter than cluster-node-timeout): it still holds its
//     slots as a primary, empty, and its replica resynchronises from it and loses the shard's keys too,
//     which is what a primary without persistence restarting does to its replicas.
//
// Until the first gossip settles it, a node back from the dead still believes its nodes.conf and may
// answer a client as the owner of slots it no longer serves; go-redis only sends it commands when its
// slot map says so, which it reloads from any node, this one included.

// StartKilled implements Deployment: every node whose process is down starts again from its
// nodes.conf, empty, and is waited for until it has rejoined (RestartNode), in node order.
func (c *Cluster) StartKilled(ctx context.Context) ([]Rejoined, error) {
	var out []Rejoined
	var errs []error
	for _, n := range c.Killed() {
		role, of, err := c.RestartNode(ctx, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := Rejoined{Node: n.Name, Role: "primary"}
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

// RestartNode starts the killed node n again from its nodes.conf and waits, up to ctx's deadline (one
// of its own when ctx has none), until the cluster is whole again (Check: every slot served, every live
// primary with a connected replica, every node cluster_state:ok) and every other live node sees n as n
// sees itself (no failure flag, the same role and primary). It returns the node's role as ROLE names it
// ("slave" or "master") and, for a replica, the node it replicates. A running node is refused.
func (c *Cluster) RestartNode(ctx context.Context, n *ClusterNode) (role string, primary *ClusterNode, err error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return "", nil, errors.New("deploy: the cluster is closed")
	}
	if n == nil || c.byID(n.ID) != n {
		return "", nil, errors.New("deploy: RestartNode needs a node of this cluster (see Members)")
	}
	if n.Server.Running() {
		return "", nil, fmt.Errorf("deploy: %s (%s) is running; only a killed node can be restarted", n.Name, n.Announced())
	}
	// Start keeps the node's directory and its nodes.conf (it removes only RDB and AOF files).
	if err := n.Server.Start(); err != nil {
		return "", nil, fmt.Errorf("deploy: restart %s (%s): %w", n.Name, n.Announced(), err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.rejoinTimeout())
		defer cancel()
	}
	for {
		err := c.Check(ctx)
		if err == nil {
			err = c.agreed(ctx, n)
		}
		if err == nil {
			return c.RoleOf(ctx, n)
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return "", nil, fmt.Errorf("deploy: %s restarted but did not rejoin (is its nodes.conf intact, are its proxies up?): %w", n.Name, err)
		}
	}
}

// agreed reports whether every other live node sees n as n sees itself: no failure flag on it, and the
// same role (a primary, or a replica of the same node).
func (c *Cluster) agreed(ctx context.Context, n *ClusterNode) error {
	self, err := c.nodesLine(ctx, n, n)
	if err != nil {
		return err
	}
	for _, m := range c.live() {
		if m == n {
			continue
		}
		other, err := c.nodesLine(ctx, m, n)
		if err != nil {
			return err
		}
		if strings.Contains(other.flags, "fail") {
			return fmt.Errorf("%s still flags %s %s", m.Name, n.Name, other.flags)
		}
		if other.role() != self.role() || other.primary != self.primary {
			return fmt.Errorf("%s sees %s as %s of %q, it says %s of %q", m.Name, n.Name, other.role(), other.primary, self.role(), self.primary)
		}
	}
	return nil
}

// nodeView is what one node's CLUSTER NODES says about another.
type nodeView struct{ flags, primary string }

func (v nodeView) role() string {
	if strings.Contains(v.flags, "slave") {
		return "replica"
	}
	return "primary"
}

// nodesLine returns what from's CLUSTER NODES says about about.
func (c *Cluster) nodesLine(ctx context.Context, from, about *ClusterNode) (nodeView, error) {
	out, err := from.ctl.ClusterNodes(ctx).Result()
	if err != nil {
		return nodeView{}, fmt.Errorf("CLUSTER NODES on %s: %w", from.Name, err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == about.ID {
			return nodeView{flags: f[2], primary: f[3]}, nil
		}
	}
	return nodeView{}, fmt.Errorf("%s does not list %s", from.Name, about.Name)
}

// RoleOf returns n's role as it reports it ("master" or "slave", as ROLE names them) and, for a
// replica, the node it replicates.
func (c *Cluster) RoleOf(ctx context.Context, n *ClusterNode) (role string, primary *ClusterNode, err error) {
	r, err := n.ctl.Do(ctx, "ROLE").Slice()
	if err != nil || len(r) == 0 {
		return "", nil, fmt.Errorf("deploy: ROLE on %s: %w", n.Name, err)
	}
	role = fmt.Sprint(r[0])
	if role != "slave" || len(r) < 3 {
		return role, nil, nil
	}
	addr := fmt.Sprint(r[1]) + ":" + fmt.Sprint(r[2])
	for _, m := range c.nodes {
		if m.Announced() == addr {
			return role, m, nil
		}
	}
	return role, nil, fmt.Errorf("deploy: %s replicates %s, which is no node's announced address", n.Name, addr)
}

// Killed lists the nodes whose process is not running, in node order.
func (c *Cluster) Killed() []*ClusterNode {
	var out []*ClusterNode
	for _, n := range c.nodes {
		if !n.Server.Running() {
			out = append(out, n)
		}
	}
	return out
}

// rejoinTimeout bounds RestartNode's wait when the caller's context has no deadline: cluster-node-timeout
// for the failure flag to clear, and a full resynchronisation of a small dataset, with room.
func (c *Cluster) rejoinTimeout() time.Duration { return max(30*time.Second, 20*c.opts.NodeTimeout) }
