package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// ErrSpec is returned for a deployment spec that is not understood.
var ErrSpec = errors.New("deploy: unknown backend: use auto, server, embedded, server:rdb, server:aof, sentinel, independent, cluster, addr=HOST:PORT or container")

// Options are what a deployment of several nodes needs from its caller.
type Options struct {
	// TimeScale multiplies a Sentinel set's own timings (down-after, failover timeout); 0 means 1.
	TimeScale float64
	// Peers creates the proxies a deployment of several nodes (Sentinel, Cluster, independent nodes)
	// puts in front of each node and announces; required for those. The deployment removes the links
	// it created when it closes; Peers itself is left to its owner.
	Peers Proxies
	// LogDir, when set, receives the logs of a Sentinel set's nodes when it closes.
	LogDir string

	_ struct{}
}

// Open starts (or connects to) the deployment spec names:
//
//	auto        a private redis-server when the binary exists, else embedded
//	server      a private redis-server on a free loopback port, without persistence; server:none is the same
//	server:rdb  the same with RDB snapshots (redis-server's default save points, and SAVE on demand)
//	server:aof  the same with an append-only file fsynced every second (appendfsync everysec)
//	embedded    miniredis in this process, its TTLs advanced in real time
//	addr=H:P    a user's Redis; never flushed, never hurt
//	container   redis in a container via testcontainers-go (needs a Docker engine: ErrNoDocker)
//	sentinel    a private primary, two replicas and three sentinels, at spec timing times TimeScale
//	independent three private, independent redis-servers (Redlock's deployment)
//	cluster     a private Redis Cluster: three primaries, three replicas
func Open(ctx context.Context, spec string, o Options) (Deployment, error) {
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	switch {
	case spec == TopologySentinel:
		return openSentinel(ctx, o)
	case spec == TopologyIndependent:
		return openIndependent(ctx, o)
	case spec == TopologyCluster:
		return openCluster(ctx, o)
	case spec == "" || spec == "auto":
		if _, ok := redisserver.Available(); ok {
			return openServer(ctx, redisserver.PersistNone)
		}
		return openEmbedded()
	case spec == "server" || strings.HasPrefix(spec, "server:"):
		p, err := serverPersistence(spec)
		if err != nil {
			return nil, err
		}
		return openServer(ctx, p)
	case spec == "embedded":
		return openEmbedded()
	case strings.HasPrefix(spec, "addr="):
		addr, err := externalAddr(spec)
		if err != nil {
			return nil, err
		}
		return openExternal(addr), nil
	case spec == "container":
		return openContainer(ctx)
	}
	return nil, fmt.Errorf("%w (got %q)", ErrSpec, spec)
}

// CheckSpec reports whether spec is a deployment Open understands, without opening it.
func CheckSpec(spec string) error {
	switch {
	case spec == "" || spec == "auto" || spec == "server" || spec == "embedded" || spec == "container" || spec == TopologySentinel ||
		spec == TopologyIndependent || spec == TopologyCluster:
		return nil
	case strings.HasPrefix(spec, "server:"):
		_, err := serverPersistence(spec)
		return err
	case strings.HasPrefix(spec, "addr="):
		_, err := externalAddr(spec)
		return err
	}
	return fmt.Errorf("%w (got %q)", ErrSpec, spec)
}

func externalAddr(spec string) (string, error) {
	addr := strings.TrimPrefix(spec, "addr=")
	if addr == "" || !strings.Contains(addr, ":") {
		return "", fmt.Errorf("deploy: --redis %q: give an address as addr=HOST:PORT", spec)
	}
	return addr, nil
}

// serverPersistence reads the persistence of a "server" or "server:MODE" spec.
func serverPersistence(spec string) (string, error) {
	mode, ok := strings.CutPrefix(spec, "server:")
	if !ok {
		return redisserver.PersistNone, nil
	}
	if mode == "" || redisserver.CheckPersistence(mode) != nil {
		return "", fmt.Errorf("deploy: --redis %q: unknown persistence %q (valid: server:%s)", spec, mode,
			strings.Join(redisserver.PersistenceModes, ", server:"))
	}
	return mode, nil
}

// Resolve returns the spec to open for a user's spec when the run needs topology and, when not "",
// persistence ("rdb" or "aof": it restarts Redis from its files). A deployment of several nodes is
// started privately when the user asked for private servers ("auto", "server") or for it by name; a
// persistence is had from a private server ("auto" and "server" are upgraded). Any other spec is
// refused with what the run needs.
func Resolve(spec, topology, persistence string) (string, error) {
	var need string
	switch topology {
	case TopologySingle:
		return withPersistence(spec, persistence)
	case TopologySentinel:
		need = "the scenario needs a Sentinel set (a primary, two replicas and three sentinels the harness starts)"
	case TopologyIndependent:
		need = "the run needs independent Redis nodes (three redis-servers the harness starts)"
	case TopologyCluster:
		need = "the scenario needs a Redis Cluster (three primaries and three replicas the harness starts)"
	default:
		return "", fmt.Errorf("deploy: unknown topology %q (valid: %q for one node, %q, %q, %q)", topology, TopologySingle, TopologySentinel, TopologyIndependent, TopologyCluster)
	}
	switch spec {
	case "", "auto", "server", topology:
	default:
		return "", fmt.Errorf("deploy: %s, which --redis %s cannot provide; use --redis %s, or server or auto for private processes", need, spec, topology)
	}
	if _, err := withPersistence(topology, persistence); err != nil {
		return "", err
	}
	return topology, nil
}

// withPersistence upgrades "auto" and "server" to a server with persistence, and refuses any other
// spec that lacks it.
func withPersistence(spec, persistence string) (string, error) {
	if persistence == "" {
		return spec, nil
	}
	switch spec {
	case "", "auto", "server", "server:" + persistence:
		return "server:" + persistence, nil
	}
	return "", fmt.Errorf("deploy: the schedule restarts Redis from its %s files, which needs --redis server:%s (or server, auto), not %q", persistence, persistence, spec)
}

// Refuses says why the deployment spec names refuses to kill (and, when pause is set, to pause) its
// Redis, or "" when it does both. "auto" is what it stands for on this machine.
func Refuses(spec string, pause bool) string {
	if spec == "" || spec == "auto" {
		if _, ok := redisserver.Available(); ok {
			return ""
		}
		spec = "embedded"
	}
	switch {
	case spec == "server" || strings.HasPrefix(spec, "server:") || spec == TopologySentinel || spec == TopologyIndependent ||
		spec == TopologyCluster:
		return ""
	case spec == "embedded" && pause:
		return "the embedded Redis (chosen because no redis-server is installed, or asked for) cannot pause"
	case spec == "embedded":
		return ""
	case spec == "container":
		return "the container backend does not do"
	}
	return "an external Redis is not the harness's to do"
}
