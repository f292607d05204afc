package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// A Sentinel set as a Deployment: its verbs act on the node named, and "the primary" is the data
// node a majority of the sentinels name now.

func openSentinel(ctx context.Context, o Options) (Deployment, error) {
	t, err := StartSentinel(ctx, SentinelOptions{TimeScale: o.TimeScale, LogDir: o.LogDir, Proxies: o.Peers})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("deploy: --redis sentinel runs real redis-server processes: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis): %w", err)
		}
		return nil, err
	}
	return t, nil
}

// Admin implements Deployment: a FailoverClient that dials the processes directly (Direct).
func (t *Sentinel) Admin() redis.UniversalClient { return t.admin }

// Watch implements Deployment: the promotions the sentinels announce (WatchPromotions).
func (t *Sentinel) Watch(ctx context.Context, fn func(Promotion)) func() {
	return t.WatchPromotions(ctx, fn)
}

// Primary implements Deployment: the data node a majority of the sentinels name, whatever the key.
func (t *Sentinel) Primary(ctx context.Context, _ string) (Serving, error) {
	p, err := t.PrimaryNode(ctx)
	return Serving{Node: p.Name}, err
}

// StartKilled implements Deployment: every killed data node starts again, empty, with the arguments
// it first had (a replica points at the first primary); the sentinels then make it a replica of the
// primary they know, in their own time, which is not waited for.
func (t *Sentinel) StartKilled(context.Context) ([]Rejoined, error) { return t.startKilled("") }

// Save implements Deployment: refused.
func (t *Sentinel) Save(context.Context) error { return t.noFiles() }

// Reload implements Deployment: refused.
func (t *Sentinel) Reload(context.Context) error { return t.noFiles() }

func (t *Sentinel) noFiles() error {
	return refuse("a Sentinel set's nodes run without persistence; use --redis server:rdb or server:aof")
}

// Promote implements Deployment: SENTINEL FAILOVER (Failover).
func (t *Sentinel) Promote(ctx context.Context) error { return t.Failover(ctx) }

// Migrate implements Deployment: refused.
func (t *Sentinel) Migrate(context.Context, string, time.Duration) (Migration, error) {
	return Migration{}, refuse("a Sentinel set has no hash slots to move; use --redis cluster")
}

// saveLogs copies every node's log into LogDir before the servers' directories are removed.
func (t *Sentinel) saveLogs() error {
	if err := os.MkdirAll(t.opts.LogDir, 0o755); err != nil {
		return fmt.Errorf("deploy: log dir: %w", err)
	}
	var errs []error
	for _, n := range t.nodes {
		b, err := os.ReadFile(filepath.Join(t.servers[n.Name].Dir(), "redis.log"))
		if err == nil {
			err = os.WriteFile(filepath.Join(t.opts.LogDir, n.Name+".log"), b, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
