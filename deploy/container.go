package deploy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// containerImage is the image a container deployment runs.
const containerImage = "redis:7-alpine"

// ErrNoDocker is returned by a container deployment when no Docker engine answers.
var ErrNoDocker = errors.New("deploy: --redis container needs a running Docker engine and none is reachable (start Docker or set DOCKER_HOST), or use --redis server / embedded")

// container is Redis in a container started through testcontainers-go, without persistence. The
// harness reaches it on its mapped port; it does not hurt it.
type container struct {
	single
	uncontrolled
	c *testcontainers.DockerContainer
}

var _ Deployment = (*container)(nil)

func openContainer(ctx context.Context) (d Deployment, err error) {
	// testcontainers panics in some versions when no engine is found; turn that into the error it is.
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%w: %v", ErrNoDocker, r)
		}
	}()
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	defer p.Close()
	if err := p.Health(hctx); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	c, err := testcontainers.Run(ctx, containerImage,
		testcontainers.WithExposedPorts("6379/tcp"),
		testcontainers.WithCmd("redis-server", "--save", "", "--appendonly", "no"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("6379/tcp").WithStartupTimeout(60*time.Second)),
	)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.Background())
		}
		return nil, fmt.Errorf("deploy: start redis container: %w", err)
	}
	addr, err := c.PortEndpoint(ctx, "6379/tcp", "")
	if err != nil {
		_ = c.Terminate(context.Background())
		return nil, fmt.Errorf("deploy: redis container address: %w", err)
	}
	return &container{single: newSingle(addr), c: c,
		uncontrolled: uncontrolled{"kill, restart and pause are not implemented for the container backend"}}, nil
}

// About implements Deployment.
func (b *container) About() About {
	return About{Describe: containerImage + " container at " + b.addr, Topology: TopologySingle, Persistence: redisserver.PersistNone}
}

// Close implements Deployment: the container is removed.
func (b *container) Close() error {
	b.closeAdmin()
	return b.c.Terminate(context.Background())
}
