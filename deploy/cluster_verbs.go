package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// A Redis Cluster as a Deployment: "the primary" of a key is the live primary serving its hash slot,
// and the deployment's own primary (key "") the one serving slot 0. A primary that Kill ends is
// followed until another node serves its slots, which Watch reports as a promotion.

func openCluster(ctx context.Context, o Options) (Deployment, error) {
	c, err := StartCluster(ctx, ClusterOptions{Proxies: o.Peers})
	if err != nil {
		if errors.Is(err, ErrNoBinary) || errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("deploy: --redis cluster runs real redis-server processes: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
		}
		return nil, err
	}
	return c, nil
}

// Primary implements Deployment: the live primary serving key's slot (slot 0 for ""), with the slot
// and every slot range that primary serves.
func (c *Cluster) Primary(ctx context.Context, key string) (Serving, error) {
	slot := 0
	if key != "" {
		var err error
		if slot, err = c.Slot(ctx, key); err != nil {
			return Serving{}, err
		}
	}
	n, ranges, err := c.primaryOf(ctx, slot)
	if err != nil {
		return Serving{Slot: slot}, err
	}
	return Serving{Node: n.Name, Slot: slot, Slots: ranges}, nil
}

// Kill implements Deployment. A primary killed while Watch watches is followed, in the background,
// until another node serves its first slot; then the promotion is reported.
func (c *Cluster) Kill(ctx context.Context, name string) error {
	n, err := c.byName(name)
	if err != nil {
		return err
	}
	c.follow(ctx, n)
	return n.Server.Kill()
}

// Pause implements Deployment.
func (c *Cluster) Pause(_ context.Context, name string) (func() error, error) {
	return pauseNode(c, name)
}

// Watch implements Deployment: promotions after a Kill (see Kill).
func (c *Cluster) Watch(ctx context.Context, fn func(Promotion)) func() {
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.watch, c.watchCtx = fn, ctx
	c.mu.Unlock()
	return func() {
		cancel()
		c.followers.Wait()
	}
}

// follow starts following n's first slot, when Watch watches and n serves one as a primary.
func (c *Cluster) follow(ctx context.Context, n *ClusterNode) {
	c.mu.Lock()
	fn, wctx := c.watch, c.watchCtx
	c.mu.Unlock()
	if fn == nil {
		return
	}
	slot, ok := c.firstSlot(ctx, n)
	if !ok {
		return
	}
	c.followers.Add(1)
	go func() {
		defer c.followers.Done()
		for {
			if p, err := c.PrimaryOf(wctx, slot); err == nil && p != n {
				fn(Promotion{From: n.Name, To: p.Name, At: time.Now()})
				return
			}
			if !sleepCtx(wctx, 20*time.Millisecond) {
				return
			}
		}
	}()
}

// firstSlot is the first slot n serves as a primary, as the first live node that answers sees it.
func (c *Cluster) firstSlot(ctx context.Context, n *ClusterNode) (int, bool) {
	for _, m := range c.live() {
		shards, err := m.ctl.ClusterShards(ctx).Result()
		if err != nil {
			continue
		}
		for _, sh := range shards {
			for _, nd := range sh.Nodes {
				if nd.ID == n.ID && nd.Role == "master" && len(sh.Slots) > 0 {
					return int(sh.Slots[0].Start), true
				}
			}
		}
		return 0, false
	}
	return 0, false
}

// Migrate implements Deployment: key's slot moves to the first other live primary in node order, one
// key per MIGRATE with pause between them, so clients meet the slot half moved (MigrateSlot).
func (c *Cluster) Migrate(ctx context.Context, key string, pause time.Duration) (Migration, error) {
	slot, err := c.Slot(ctx, key)
	if err != nil {
		return Migration{}, err
	}
	m := Migration{Slot: slot}
	src, err := c.PrimaryOf(ctx, slot)
	if err != nil {
		return m, err
	}
	m.From = src.Name
	var dst *ClusterNode
	for _, n := range c.nodes {
		if n == src || !n.Server.Running() {
			continue
		}
		role, err := n.ctl.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			dst = n
			break
		}
	}
	if dst == nil {
		return m, fmt.Errorf("deploy: no other live primary to move slot %d (of %s) to", slot, key)
	}
	m.To = dst.Name
	return m, c.MigrateSlot(ctx, slot, dst, 1, pause)
}

// Save implements Deployment: refused.
func (c *Cluster) Save(context.Context) error { return c.noFiles() }

// Reload implements Deployment: refused.
func (c *Cluster) Reload(context.Context) error { return c.noFiles() }

func (c *Cluster) noFiles() error {
	return refuse("a Redis Cluster's nodes run without persistence; use --redis server:rdb or server:aof")
}

// Promote implements Deployment: refused.
func (c *Cluster) Promote(context.Context) error {
	return refuse("a Redis Cluster promotes a shard's replica on its own once its primary fails: kill the primary (shard-primary-kill)")
}

// KillPrimary kills (SIGKILL) the primary serving key's slot and waits until another node serves it
// (its replica, promoted by the cluster's own failure detection) and every slot is served again. It
// returns the killed node and the promoted one.
func (c *Cluster) KillPrimary(ctx context.Context, key string) (killed, promoted *ClusterNode, err error) {
	slot, err := c.Slot(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	killed, err = c.PrimaryOf(ctx, slot)
	if err != nil {
		return nil, nil, err
	}
	if err := killed.Server.Kill(); err != nil {
		return killed, nil, fmt.Errorf("deploy: kill %s: %w", killed.Announced(), err)
	}
	for {
		if p, err := c.PrimaryOf(ctx, slot); err == nil && p != killed {
			if err := c.WaitServed(ctx); err != nil {
				return killed, p, err
			}
			return killed, p, nil
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			return killed, nil, fmt.Errorf("deploy: no replica took over slot %d after %s was killed: %w", slot, killed.Announced(), ctx.Err())
		}
	}
}

// MigrateSlot moves slot to the primary to, as redis-cli --cluster reshard does: IMPORTING on the
// target, MIGRATING on the source, MIGRATE of the slot's keys in batches of batch (through the
// target's announced link), then SETSLOT NODE on both and on every other primary. Between the batches
// pause is waited, so clients meet the ASK redirects of a slot half moved. A slot already on to is left
// alone.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *ClusterNode, batch int, pause time.Duration) error {
	from, err := c.PrimaryOf(ctx, slot)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if batch <= 0 {
		batch = 10
	}
	if err := to.ctl.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID).Err(); err != nil {
		return fmt.Errorf("deploy: SETSLOT %d IMPORTING on %s: %w", slot, to.Announced(), err)
	}
	if err := from.ctl.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID).Err(); err != nil {
		return fmt.Errorf("deploy: SETSLOT %d MIGRATING on %s: %w", slot, from.Announced(), err)
	}
	host, port, _ := net.SplitHostPort(to.Announced())
	for {
		ks, err := from.ctl.ClusterGetKeysInSlot(ctx, slot, batch).Result()
		if err != nil {
			return fmt.Errorf("deploy: GETKEYSINSLOT %d: %w", slot, err)
		}
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range ks {
			args = append(args, k)
		}
		if err := from.ctl.Do(ctx, args...).Err(); err != nil && err.Error() != "NOKEY" {
			return fmt.Errorf("deploy: MIGRATE %d keys of slot %d to %s: %w", len(ks), slot, to.Announced(), err)
		}
		if pause > 0 && !sleepCtx(ctx, pause) {
			return ctx.Err()
		}
	}
	// The target first, so that the slot is never owned by nobody; the other primaries learn it now
	// rather than by gossip (replicas refuse SETSLOT and learn it from their primaries).
	done := map[*ClusterNode]bool{}
	for _, n := range append([]*ClusterNode{to, from}, c.live()...) {
		if done[n] {
			continue
		}
		done[n] = true
		if role, err := n.ctl.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
			continue
		}
		if err := n.ctl.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", to.ID).Err(); err != nil {
			return fmt.Errorf("deploy: SETSLOT %d NODE on %s: %w", slot, n.Announced(), err)
		}
	}
	return nil
}
