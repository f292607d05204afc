package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/internal/redisserver"
)

// What every deployment of redis-server processes shares: starting a node behind its peer proxy,
// knowing its nodes by name, and the verbs that act on one node's process whatever the deployment
// (kill, pause, start again).

// ErrNoBinary is returned when redis-server is missing.
var ErrNoBinary = fmt.Errorf("deploy: a multi-node deployment runs real redis-server processes: %w", redisserver.ErrNoBinary)

// started is what a constructor tears down when it fails half way.
type started struct {
	servers []*redisserver.Server
	links   []Link
}

func (s *started) close() error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.Close())
	}
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// peer reserves a port for a node and creates its peer proxy towards it.
func (s *started) peer(p Proxies, name string) (port int, link Link, err error) {
	port, err = redisserver.FreePort()
	if err != nil {
		return 0, nil, err
	}
	link, err = p.NewLink("peer-"+name, net.JoinHostPort("127.0.0.1", fmt.Sprint(port)))
	if err != nil {
		return 0, nil, err
	}
	s.links = append(s.links, link)
	return port, link, nil
}

// needProxies refuses a deployment of several nodes started without proxies to announce.
func needProxies(p Proxies, what string) error {
	if p == nil {
		return fmt.Errorf("deploy: %s needs Proxies to put in front of its nodes (chaos.ForDeploy over chaos.NewEmbedded, or a toxiproxy-server's chaos.NewRemote)", what)
	}
	return nil
}

// binary is the redis-server a deployment of several nodes runs: bin, or the one on PATH.
func binary(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	p, ok := redisserver.Available()
	if !ok {
		return "", ErrNoBinary
	}
	return p, nil
}

// splitPort returns the port of a loopback host:port.
func splitPort(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// waitFor polls cond every 20 ms until it returns nil or timeout passes, then returns its last error.
func waitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// nodeSet is the bookkeeping of a Sentinel set's or independent nodes' nodes: the nodes in a fixed
// order, and their processes and peer links by name.
type nodeSet struct {
	nodes   []Node
	servers map[string]*redisserver.Server
	links   map[string]Link
}

func newNodeSet() nodeSet {
	return nodeSet{servers: map[string]*redisserver.Server{}, links: map[string]Link{}}
}

// add records a started node.
func (ns *nodeSet) add(n Node, srv *redisserver.Server, link Link) {
	ns.nodes = append(ns.nodes, n)
	ns.servers[n.Name], ns.links[n.Name] = srv, link
}

// Nodes implements Deployment.
func (ns *nodeSet) Nodes() []Node { return append([]Node(nil), ns.nodes...) }

// ByAnnounced returns the node announced at addr.
func (ns *nodeSet) ByAnnounced(addr string) (Node, bool) {
	for _, n := range ns.nodes {
		if n.Announced == addr {
			return n, true
		}
	}
	return Node{}, false
}

// Server returns the process of the named node.
func (ns *nodeSet) Server(name string) (*redisserver.Server, error) {
	if s, ok := ns.servers[name]; ok {
		return s, nil
	}
	return nil, noNode(name, ns.nodes)
}

// PeerLink implements Deployment.
func (ns *nodeSet) PeerLink(name string) (Link, error) {
	if l, ok := ns.links[name]; ok {
		return l, nil
	}
	return nil, noNode(name, ns.nodes)
}

// Kill implements Deployment.
func (ns *nodeSet) Kill(_ context.Context, name string) error { return killNode(ns, name) }

// Pause implements Deployment.
func (ns *nodeSet) Pause(_ context.Context, name string) (func() error, error) {
	return pauseNode(ns, name)
}

// startKilled starts every data node whose process is down again, empty; role names what each is once
// started.
func (ns *nodeSet) startKilled(role string) ([]Rejoined, error) {
	var out []Rejoined
	var errs []error
	for _, n := range ns.nodes {
		s := ns.servers[n.Name]
		if n.Sentinel || s.Running() {
			continue
		}
		if err := s.Start(); err != nil {
			errs = append(errs, fmt.Errorf("deploy: start %s again: %w", n.Name, err))
			continue
		}
		out = append(out, Rejoined{Node: n.Name, Role: role})
	}
	return out, errors.Join(errs...)
}

// processes finds a node's process by name.
type processes interface {
	Server(name string) (*redisserver.Server, error)
}

// killNode and pauseNode are Kill and Pause for every deployment of redis-server processes.
func killNode(p processes, name string) error {
	s, err := p.Server(name)
	if err != nil {
		return err
	}
	return s.Kill()
}

func pauseNode(p processes, name string) (func() error, error) {
	s, err := p.Server(name)
	if err != nil {
		return nil, err
	}
	if err := s.Pause(); err != nil {
		return nil, err
	}
	return s.Resume, nil
}

// joinNames lists names for a message.
func joinNames(names []string) string { return strings.Join(names, ", ") }
