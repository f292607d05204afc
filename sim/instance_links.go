package sim

import (
	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
)

// What an instance gets of a deployment of several nodes: its own link to every node, a client of the
// deployment whose dialer maps each node's announced address to the instance's link for it, and, for a
// system that asks for its topology, a plain client of each data node. The instance's chaos.Link is all
// of its links at once, so an instance fault (partition, latency, one-way, stall) applies to every link
// of the instance.

// several reports whether d has several nodes, each of which an instance reaches on a link of its own.
func several(d deploy.Deployment) bool { return d.About().Topology != TopologySingle }

// singleAddr is the address of a one-node deployment's node, which an instance's link forwards to.
func singleAddr(d deploy.Deployment) string { return d.Nodes()[0].Listen }

// deploymentLinks gives an instance its own link to every node of d, named after the instance's slot,
// and returns them as one chaos.Link (a fault applies to all) with the client that uses them.
func deploymentLinks(p chaos.Proxies, prefix string, d deploy.Deployment, o deploy.ClientOptions) (chaos.Link, redis.UniversalClient, deploy.Dialer, error) {
	var links []chaos.Link
	local := map[string]string{}
	for _, n := range d.Nodes() {
		l, err := p.NewLink(prefix+"-"+n.Name, n.Listen)
		if err != nil {
			for _, l := range links {
				_ = l.Close()
			}
			return nil, nil, nil, err
		}
		links = append(links, l)
		local[n.Announced] = l.Addr()
	}
	dial := deploy.MapDialer(local, o.DialTimeout)
	return chaos.Fanout(links...), d.NewClient(o, dial), dial, nil
}

// nodeClients builds the instance's clients of each data node, when the system asks for a topology
// (see InstanceConfig.Nodes); dial maps each node's announced address to the instance's link for it.
func (r *runner) nodeClients(in *vinstance, dial deploy.Dialer) []redis.UniversalClient {
	if _, asks := r.o.System.(TopologyUser); !asks || !several(r.backend) || dial == nil {
		return nil
	}
	var out []redis.UniversalClient
	for _, n := range r.backend.Nodes() {
		if n.Sentinel {
			continue
		}
		c := deploy.NodeClient(n, deploy.ClientOptions{DialTimeout: r.timing.OpTimeout, ReadTimeout: r.timing.OpTimeout,
			WriteTimeout: r.timing.OpTimeout, PoolSize: 8, MaxRetries: 3}, dial)
		c.AddHook(&recordingHook{instance: in.id, node: n.Name, rec: r.rec, classifier: r.classifier, dead: in.dead.Load,
			hold: in.hold, wire: in.atWire, defaults: defaultClassifier{leasePrefix: r.keyPrefix + "lease:"}})
		in.nodes = append(in.nodes, c)
		out = append(out, c)
	}
	return out
}

// closeClients closes every client of the instance.
func (in *vinstance) closeClients() {
	if in.client != nil {
		_ = in.client.Close()
	}
	for _, c := range in.nodes {
		_ = c.Close()
	}
}

var _ chaos.LeaseKeys = (*runner)(nil)

// LeaseKey implements chaos.LeaseKeys: the key of the newest recorded acquire or renewal of endpoint,
// so that a fault aimed at "the shard serving ep-0" hits that shard whatever the system under test
// names its keys (a baseline's poll:lease:ep-0 as much as the reference's poll:lease:{ep-0}). Before any
// such operation it is "", and the fault takes the endpoint's hash tag.
func (r *runner) LeaseKey(endpoint string) string { return leaseKeyOf(r.rec.Events(), endpoint) }

// leaseKeyOf is the key of the newest acquire or renewal of endpoint in events, or "" if there is none.
func leaseKeyOf(events []history.Event, endpoint string) string {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Op == nil || e.Endpoint != endpoint || e.Op.Key == "" {
			continue
		}
		if e.Op.Kind == history.OpAcquire || e.Op.Kind == history.OpRenew {
			return e.Op.Key
		}
	}
	return ""
}
