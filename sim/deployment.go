package sim

import (
	"fmt"
	"sync"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// The Redis deployment a run needs, chosen from the user's --redis, the scenario's topology, the
// system's and the schedule's needs. Starting, reaching and hurting it is package deploy's; what an
// instance gets of it (its links, its clients, the recording hook) is wired in instance_links.go.

// Topologies a scenario can ask for (Scenario.Topology); see package deploy.
const (
	// TopologySingle is one Redis node: every backend provides it.
	TopologySingle = deploy.TopologySingle
	// TopologySentinel is a primary, two replicas and three sentinels (--redis sentinel).
	TopologySentinel = deploy.TopologySentinel
	// TopologyCluster is a Redis Cluster of three primaries and three replicas (--redis cluster). The
	// reference picks its cluster key layout on it (an endpoint's keys share the endpoint's hash slot).
	TopologyCluster = deploy.TopologyCluster
	// TopologyIndependent is three independent Redis nodes (--redis independent): the deployment Redlock
	// assumes. The first node also holds the run's poll targets.
	TopologyIndependent = deploy.TopologyIndependent
)

// TopologyUser is an optional capability of a System: the Redis deployment it needs, whatever the
// scenario (TopologyIndependent for Redlock). A scenario that needs one node runs on the system's
// topology; one that needs another topology is refused.
type TopologyUser interface {
	Topology() string
}

// TopologyNeed is the topology a run of system on a scenario that needs sc needs.
func TopologyNeed(system System, sc string) (string, error) {
	tu, ok := system.(TopologyUser)
	if !ok || tu.Topology() == TopologySingle || tu.Topology() == sc {
		return sc, nil
	}
	if sc != TopologySingle {
		return "", fmt.Errorf("sim: system %s runs on %s nodes and the scenario needs a %s topology", system.Name(), tu.Topology(), sc)
	}
	return tu.Topology(), nil
}

// BackendFor returns the backend spec a run with schedule s opens: a schedule with a persistence fault
// (chaos.RedisRestartFromSnapshot, chaos.RedisRestartAOF) needs a private server with that persistence,
// so "auto" and "server" become "server:rdb" or "server:aof". A spec that names another backend or
// persistence is an error that says what the schedule needs.
func BackendFor(spec string, s chaos.Schedule) (string, error) {
	return BackendForScenario(spec, TopologySingle, s)
}

// BackendForScenario returns the backend spec a run of a scenario with topology need and schedule s
// opens (deploy.Resolve; see BackendFor for the schedule's part). A scenario that needs a Sentinel set,
// a Cluster or independent nodes gets a private one when the user asked for private servers ("auto",
// "server", which is what CI passes) or for it by name; any other spec is refused with what the
// scenario needs. A single-node scenario runs on whatever was asked, a deployment of several nodes
// included: its Redis faults then act on that deployment's primary.
func BackendForScenario(spec, need string, s chaos.Schedule) (string, error) {
	p, err := schedulePersistence(s)
	if err != nil {
		return "", err
	}
	return deploy.Resolve(spec, need, p)
}

// schedulePersistence is the persistence a schedule's faults restart Redis from ("" for none).
func schedulePersistence(s chaos.Schedule) (string, error) {
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
	return need, nil
}

// PromotionNote is the note a promotion is recorded as: "promotion: redis-0 -> redis-1".
func PromotionNote(from, to string) string {
	return fmt.Sprintf("%s%s -> %s", history.NotePromotion, from, to)
}

// peerProxies is where a deployment of several nodes creates the proxies it announces its nodes at
// (replication, the sentinels' pings, the cluster bus): the run's --toxiproxy server, under the run's
// prefix, so that every link of the run is there; else a toxiproxy of their own in this process, seeded
// like the run and made only when a deployment asks for a link. The deployment removes its links when
// it closes; close removes the toxiproxy of their own.
type peerProxies struct {
	remote chaos.Proxies // nil: an embedded toxiproxy of their own
	seed   int64

	mu  sync.Mutex
	own *chaos.Embedded
}

// NewLink implements chaos.Proxies.
func (p *peerProxies) NewLink(name, upstream string) (chaos.Link, error) {
	if p.remote != nil {
		return p.remote.NewLink(name, upstream)
	}
	p.mu.Lock()
	if p.own == nil {
		p.own = chaos.NewEmbedded(p.seed)
	}
	own := p.own
	p.mu.Unlock()
	return own.NewLink(name, upstream)
}

// Close implements chaos.Proxies: the toxiproxy of their own goes; a remote server is its owner's.
func (p *peerProxies) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.own == nil {
		return nil
	}
	return p.own.Close()
}
