package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// server is a private redis-server on a free loopback port, dying with the harness, with the
// persistence it was started with.
type server struct {
	single
	s       *redisserver.Server
	version string
}

var _ Deployment = (*server)(nil)

func openServer(ctx context.Context, persistence string) (Deployment, error) {
	s, err := redisserver.Start(redisserver.Options{Persistence: persistence})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("deploy: --redis server needs redis-server: install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or use --redis embedded: %w", err)
		}
		return nil, err
	}
	v, _ := redisserver.Version(ctx, "")
	return &server{single: newSingle(s.Addr()), s: s, version: v}, nil
}

// About implements Deployment.
func (b *server) About() About {
	d := fmt.Sprintf("%s (private, %s)", b.version, b.s.Addr())
	if p := b.s.Persistence(); p != redisserver.PersistNone {
		d = fmt.Sprintf("%s (private, %s, persistence %s)", b.version, b.s.Addr(), p)
	}
	return About{Describe: d, Topology: TopologySingle, Persistence: b.s.Persistence()}
}

// Server returns the node's process.
func (b *server) Server(name string) (*redisserver.Server, error) {
	if err := b.check(name); err != nil {
		return nil, err
	}
	return b.s, nil
}

// Kill implements Deployment.
func (b *server) Kill(_ context.Context, name string) error { return killNode(b, name) }

// Pause implements Deployment.
func (b *server) Pause(_ context.Context, name string) (func() error, error) {
	return pauseNode(b, name)
}

// StartKilled implements Deployment: a killed server starts again on its port with its files removed,
// so empty whatever its persistence.
func (b *server) StartKilled(context.Context) ([]Rejoined, error) {
	if b.s.Running() {
		return nil, nil
	}
	if err := b.s.Start(); err != nil {
		return nil, err
	}
	return []Rejoined{{Node: singleName, Role: "primary"}}, nil
}

// Save implements Deployment: SAVE, waited for.
func (b *server) Save(context.Context) error { return b.s.Save() }

// Reload implements Deployment: SIGKILL, then a start in the same directory with the same file names,
// loading the AOF with persistence aof, else the last snapshot (none, if nothing was saved).
func (b *server) Reload(context.Context) error { return b.s.Reload() }

// Close implements Deployment.
func (b *server) Close() error {
	b.closeAdmin()
	return b.s.Close()
}
