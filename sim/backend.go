package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Backend is the Redis a run uses. Faults that need control of the server (kill, restart, pause) ask
// for the chaos.Backend capabilities and fail with chaos.ErrUnsupported where a backend cannot do them.
type Backend interface {
	chaos.Backend
	// Addr is the address proxies forward to.
	Addr() string
	// Describe names the backend for reports ("redis-server 7.0.15 (private, 127.0.0.1:40123)").
	Describe() string
	// Shared reports whether the backend holds data that is not the run's (an external address): the
	// run then namespaces its keys and never flushes.
	Shared() bool
	// Persistence is what the backend keeps across a restart: "none", "rdb" or "aof". An external or
	// container Redis reports "none": the harness never restarts it, so its files never matter.
	Persistence() string
	// Close stops the backend if the run started it.
	Close() error
}

// ErrBackendSpec is returned for a --redis value that is not understood.
var ErrBackendSpec = errors.New("sim: unknown backend: use auto, server, embedded, server:rdb, server:aof, sentinel, independent, cluster, addr=HOST:PORT or container")

// BackendOptions are what a backend of several processes needs from the run.
type BackendOptions struct {
	// TimeScale scales the topology's own timings (Sentinel's down-after and failover timeout).
	TimeScale float64
	// Seed seeds the topology's peer links (their latency jitter).
	Seed int64
	// Proxies, when set, is the toxiproxy a topology creates its peer links on (the addresses its nodes
	// are announced at: replication, the sentinels' pings, the cluster bus), each name prefixed with
	// PeerPrefix so that runs sharing a toxiproxy-server do not collide. The topology removes the links
	// it created when it closes; Proxies itself is left to its owner. Nil: a toxiproxy of the
	// topology's own, in this process, seeded with Seed. A run passes its --toxiproxy server here, so
	// every link of the run is on it.
	Proxies    chaos.Proxies
	PeerPrefix string
}

// OpenBackend starts or connects to the backend named by spec:
//
//	auto       a private redis-server when the binary exists, else embedded
//	server     a private redis-server on a free loopback port (killable, pausable, restartable),
//	           without persistence; server:none is the same
//	server:rdb the same with RDB snapshots (redis-server's default save points, and SAVE on demand)
//	server:aof the same with an append-only file fsynced every second (appendfsync everysec)
//	embedded   miniredis in this process, its TTLs advanced in real time
//	addr=H:P   an external Redis; never flushed, keys namespaced by run
//	container  redis in a container via testcontainers-go (needs a Docker engine)
//	sentinel   a private primary, two replicas and three sentinels (package deploy), at spec timing
//	independent three private, independent redis-servers (Redlock's deployment); the first holds the targets
//	cluster    a private Redis Cluster: three primaries, three replicas (package deploy)
func OpenBackend(ctx context.Context, spec string) (Backend, error) {
	return OpenBackendWith(ctx, spec, BackendOptions{TimeScale: 1})
}

// OpenBackendWith is OpenBackend with the run's time scale and seed, which a topology uses.
func OpenBackendWith(ctx context.Context, spec string, o BackendOptions) (Backend, error) {
	switch {
	case spec == TopologySentinel:
		if o.TimeScale <= 0 {
			o.TimeScale = 1
		}
		return openSentinel(ctx, o.TimeScale, o.Seed, o.peerProxies())
	case spec == TopologyIndependent:
		return openIndependent(ctx, o.Seed, o.peerProxies())
	case spec == TopologyCluster:
		return openCluster(ctx, o.Seed, o.peerProxies())
	case spec == "" || spec == "auto":
		if _, ok := redisserver.Available(); ok {
			return openServer(ctx)
		}
		return openEmbedded()
	case spec == "server" || strings.HasPrefix(spec, "server:"):
		p, err := serverPersistence(spec)
		if err != nil {
			return nil, err
		}
		return openServerWith(ctx, p)
	case spec == "embedded":
		return openEmbedded()
	case strings.HasPrefix(spec, "addr="):
		addr := strings.TrimPrefix(spec, "addr=")
		if addr == "" || !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("sim: --redis %q: give an address as addr=HOST:PORT", spec)
		}
		return &externalBackend{addr: addr, noControl: noControl{"an external Redis is not the harness's to kill, restart or pause"}}, nil
	case spec == "container":
		return openContainer(ctx)
	}
	return nil, fmt.Errorf("%w (got %q)", ErrBackendSpec, spec)
}

// CheckBackendSpec reports whether spec is a backend OpenBackend understands, without opening it.
func CheckBackendSpec(spec string) error {
	switch {
	case spec == "" || spec == "auto" || spec == "server" || spec == "embedded" || spec == "container" || spec == TopologySentinel ||
		spec == TopologyIndependent || spec == TopologyCluster:
		return nil
	case strings.HasPrefix(spec, "server:"):
		_, err := serverPersistence(spec)
		return err
	case strings.HasPrefix(spec, "addr="):
		addr := strings.TrimPrefix(spec, "addr=")
		if addr == "" || !strings.Contains(addr, ":") {
			return fmt.Errorf("sim: --redis %q: give an address as addr=HOST:PORT", spec)
		}
		return nil
	}
	return fmt.Errorf("%w (got %q)", ErrBackendSpec, spec)
}

// serverPersistence reads the persistence of a "server" or "server:MODE" spec.
func serverPersistence(spec string) (string, error) {
	mode, ok := strings.CutPrefix(spec, "server:")
	if !ok {
		return redisserver.PersistNone, nil
	}
	if mode == "" || redisserver.CheckPersistence(mode) != nil {
		return "", fmt.Errorf("sim: --redis %q: unknown persistence %q (valid: server:%s)", spec, mode,
			strings.Join(redisserver.PersistenceModes, ", server:"))
	}
	return mode, nil
}

// serverBackend is a private redis-server.
type serverBackend struct {
	s       *redisserver.Server
	version string
}

func openServer(ctx context.Context) (Backend, error) {
	return openServerWith(ctx, redisserver.PersistNone)
}

func openServerWith(ctx context.Context, persistence string) (Backend, error) {
	s, err := redisserver.Start(redisserver.Options{Persistence: persistence})
	if err != nil {
		if errors.Is(err, redisserver.ErrNoBinary) {
			return nil, fmt.Errorf("sim: --redis server needs redis-server: install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or use --redis embedded: %w", err)
		}
		return nil, err
	}
	v, _ := redisserver.Version(ctx, "")
	return &serverBackend{s: s, version: v}, nil
}

func (b *serverBackend) Addr() string { return b.s.Addr() }
func (b *serverBackend) Describe() string {
	if p := b.s.Persistence(); p != redisserver.PersistNone {
		return fmt.Sprintf("%s (private, %s, persistence %s)", b.version, b.s.Addr(), p)
	}
	return fmt.Sprintf("%s (private, %s)", b.version, b.s.Addr())
}
func (b *serverBackend) Persistence() string { return b.s.Persistence() }

// Save and Reload implement chaos.PersistentBackend.
func (b *serverBackend) Save() error    { return b.s.Save() }
func (b *serverBackend) Reload() error  { return b.s.Reload() }
func (b *serverBackend) Shared() bool   { return false }
func (b *serverBackend) Kill() error    { return b.s.Kill() }
func (b *serverBackend) Start() error   { return b.s.Start() }
func (b *serverBackend) Restart() error { return b.s.Restart() }
func (b *serverBackend) Pause() error   { return b.s.Pause() }
func (b *serverBackend) Resume() error  { return b.s.Resume() }
func (b *serverBackend) Close() error   { return b.s.Close() }

// embeddedBackend is miniredis. miniredis only expires keys when told time has passed, so a goroutine
// advances its clock in real time.
type embeddedBackend struct {
	m    *miniredis.Miniredis
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	killed bool
}

func openEmbedded() (Backend, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("sim: start embedded redis: %w", err)
	}
	b := &embeddedBackend{m: m, stop: make(chan struct{}), done: make(chan struct{})}
	go b.tick()
	return b, nil
}

func (b *embeddedBackend) tick() {
	defer close(b.done)
	last := time.Now()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.m.SetTime(now)
			b.m.FastForward(now.Sub(last))
			last = now
		}
	}
}

func (b *embeddedBackend) Addr() string     { return b.m.Addr() }
func (b *embeddedBackend) Describe() string { return "miniredis (embedded, " + b.m.Addr() + ")" }
func (b *embeddedBackend) Shared() bool     { return false }
func (b *embeddedBackend) Persistence() string {
	return redisserver.PersistNone
}

// Kill drops the data and stops answering; Start and Restart bring it back empty on the same port.
func (b *embeddedBackend) Kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.killed {
		b.m.Close()
		b.killed = true
	}
	return nil
}

func (b *embeddedBackend) Start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.killed {
		return nil
	}
	b.m.FlushAll()
	if err := b.m.Restart(); err != nil {
		return fmt.Errorf("sim: restart embedded redis: %w", err)
	}
	b.killed = false
	return nil
}

func (b *embeddedBackend) Restart() error {
	if err := b.Kill(); err != nil {
		return err
	}
	return b.Start()
}

func (b *embeddedBackend) Pause() error {
	return fmt.Errorf("%w: the embedded backend cannot be paused; use --redis server", chaos.ErrUnsupported)
}
func (b *embeddedBackend) Resume() error { return b.Pause() }

func (b *embeddedBackend) Close() error {
	close(b.stop)
	<-b.done
	return b.Kill()
}

// noControl is the process control of a backend the harness cannot kill, restart or pause: every
// method says why.
type noControl struct{ why string }

func (n noControl) err() error {
	return fmt.Errorf("%w: %s; use --redis server", chaos.ErrUnsupported, n.why)
}
func (n noControl) Kill() error    { return n.err() }
func (n noControl) Start() error   { return n.err() }
func (n noControl) Restart() error { return n.err() }
func (n noControl) Pause() error   { return n.err() }
func (n noControl) Resume() error  { return n.err() }

// externalBackend is a Redis the run does not own.
type externalBackend struct {
	noControl
	addr string
}

func (b *externalBackend) Addr() string     { return b.addr }
func (b *externalBackend) Describe() string { return "external Redis at " + b.addr }
func (b *externalBackend) Shared() bool     { return true }
func (b *externalBackend) Persistence() string {
	return redisserver.PersistNone
}
func (b *externalBackend) Close() error { return nil }

// containerBackend is Redis in a container started through testcontainers-go.
type containerBackend struct {
	noControl
	c    *testcontainers.DockerContainer
	addr string
}

// ErrNoDocker is returned by --redis container when no Docker engine answers.
var ErrNoDocker = errors.New("sim: --redis container needs a running Docker engine and none is reachable (start Docker or set DOCKER_HOST), or use --redis server / embedded")

func openContainer(ctx context.Context) (b Backend, err error) {
	// testcontainers panics in some versions when no engine is found; turn that into the error it is.
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("%w: %v", ErrNoDocker, r)
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
	c, err := testcontainers.Run(ctx, "redis:7-alpine",
		testcontainers.WithExposedPorts("6379/tcp"),
		testcontainers.WithCmd("redis-server", "--save", "", "--appendonly", "no"),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("6379/tcp").WithStartupTimeout(60*time.Second)),
	)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.Background())
		}
		return nil, fmt.Errorf("sim: start redis container: %w", err)
	}
	addr, err := c.PortEndpoint(ctx, "6379/tcp", "")
	if err != nil {
		_ = c.Terminate(context.Background())
		return nil, fmt.Errorf("sim: redis container address: %w", err)
	}
	return &containerBackend{c: c, addr: addr, noControl: noControl{"kill, restart and pause are not implemented for the container backend"}}, nil
}

func (b *containerBackend) Addr() string     { return b.addr }
func (b *containerBackend) Describe() string { return "redis:7-alpine container at " + b.addr }
func (b *containerBackend) Shared() bool     { return false }
func (b *containerBackend) Persistence() string {
	return redisserver.PersistNone
}
func (b *containerBackend) Close() error { return b.c.Terminate(context.Background()) }

// BackendFor returns the backend spec a run with schedule s opens: a schedule with a persistence fault
// (chaos.RedisRestartFromSnapshot, chaos.RedisRestartAOF) needs a private server with that persistence,
// so "auto" and "server" become "server:rdb" or "server:aof". A spec that names another backend or
// persistence is an error that says what the schedule needs.
func BackendFor(spec string, s chaos.Schedule) (string, error) {
	need := ""
	for _, st := range s {
		var p string
		switch st.Fault.(type) {
		case chaos.RedisRestartFromSnapshot:
			p = redisserver.PersistRDB
		case chaos.RedisRestartAOF:
			p = redisserver.PersistAOF
		default:
			continue
		}
		if need != "" && need != p {
			return "", fmt.Errorf("sim: the schedule needs both %s and %s persistence; a run has one backend", need, p)
		}
		need = p
	}
	if need == "" {
		return spec, nil
	}
	switch spec {
	case "", "auto", "server", "server:" + need:
		return "server:" + need, nil
	}
	return "", fmt.Errorf("sim: the schedule restarts Redis from its %s files, which needs --redis server:%s (or server, auto), not %q", need, need, spec)
}
