package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/tenurelabs/tenure/internal/memnet"
)

// Virtual makes links for runs in virtual time: the same toxiproxy toxics as Embedded (partition,
// one-way, latency, hold, on the same proxies' toxic chains, so a fault means exactly what it means
// on an embedded link), with in-memory connections (internal/memnet) in place of loopback sockets:
// a client reaches a link through Dial, and the link reaches its upstream through the dial function
// it was given. Every wait is then on a channel or a timer of the bubble, and the bubble's clock moves
// on whenever nothing can run.
type Virtual struct {
	server   *toxiproxy.ApiServer
	seed     int64
	upstream func(ctx context.Context, network, addr string) (net.Conn, error)

	mu    sync.Mutex
	n     int // links made, numbering their addresses
	links map[string]*embeddedLink
}

// NewVirtual returns in-memory links whose latency jitter is drawn from seed and whose upstream
// connections are opened by upstream.
func NewVirtual(seed int64, upstream func(ctx context.Context, network, addr string) (net.Conn, error)) *Virtual {
	registerSeededLatency()
	registerOneWay()
	registerHold()
	m := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
	return &Virtual{server: toxiproxy.NewServer(m, zerolog.Nop()), seed: seed, upstream: upstream, links: map[string]*embeddedLink{}}
}

// NewLink implements Proxies: a link named name to upstream, reached through Dial at an address of its
// own. The address is an IP of 10.128.0.0/9 (a client may resolve a name at once, and there is no
// resolver inside a bubble); nothing listens on it.
func (v *Virtual) NewLink(name, upstream string) (Link, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, dup := v.links[name]; dup {
		return nil, fmt.Errorf("chaos: a virtual link named %s exists already", name)
	}
	v.n++
	addr := fmt.Sprintf("10.%d.%d.%d:6379", 128+v.n>>16&127, v.n>>8&255, v.n&255)
	p := toxiproxy.NewProxy(v.server, name, addr, upstream)
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	l := &embeddedLink{p: p, seed: v.seed ^ int64(h.Sum64()), mem: &memProxy{v: v, p: p, conns: map[*memnet.Conn]struct{}{}}}
	v.links[name] = l
	return l, nil
}

// Dial opens a client connection through the link whose address is addr: a client's Dialer.
func (v *Virtual) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	v.mu.Lock()
	var l *embeddedLink
	for _, c := range v.links {
		if c.p.Listen == addr {
			l = c
			break
		}
	}
	v.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "mem", Err: fmt.Errorf("no virtual link at %s", addr)}
	}
	return l.mem.dial(ctx)
}

// Close implements Proxies.
func (v *Virtual) Close() error {
	v.mu.Lock()
	links := v.links
	v.links = map[string]*embeddedLink{}
	v.mu.Unlock()
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// memProxy is the in-memory stand-in for a toxiproxy proxy's listener: the connections of one link.
type memProxy struct {
	v *Virtual
	p *toxiproxy.Proxy

	mu      sync.Mutex // bookkeeping only, never held across a wait
	n       int
	stopped bool // killed or closed: dials are refused
	conns   map[*memnet.Conn]struct{}
}

// dial accepts a client connection and connects it upstream through the proxy's toxic chains, as
// toxiproxy's server loop does for a socket.
func (m *memProxy) dial(ctx context.Context) (net.Conn, error) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "mem", Err: errors.New("connection refused")}
	}
	m.n++
	name := fmt.Sprintf("%s#%d", m.p.Name, m.n)
	m.mu.Unlock()
	up, err := m.v.upstream(ctx, "tcp", m.p.Upstream)
	if err != nil {
		// toxiproxy accepts, fails to reach the upstream, and closes the client's connection: the
		// client learns nothing more than that the connection failed.
		return nil, err
	}
	client, down := memnet.Pipe("client-of-"+name, m.p.Listen)
	dc := down.(*memnet.Conn)
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		_ = up.Close()
		_ = client.Close()
		return nil, &net.OpError{Op: "dial", Net: "mem", Err: errors.New("connection refused")}
	}
	m.conns[dc] = struct{}{}
	m.mu.Unlock()
	m.p.Toxics.StartLink(m.v.server, name+"upstream", down, sink{up}, stream.Upstream)
	m.p.Toxics.StartLink(m.v.server, name+"downstream", up, sink{down}, stream.Downstream)
	go func() {
		// The upstream end closes when either side of the connection does.
		<-dc.Done()
		_ = up.Close()
	}()
	return client, nil
}

// sink is where a toxic chain delivers: once the connection is closed it takes what the chain still
// holds and drops it, so the chain drains to its end and every goroutine of it returns. (toxiproxy's
// writer stops at the first failed write and leaves the chain behind it blocked for good; a real
// proxy shrugs that off, a virtual-time bubble ends only when every goroutine of it has.)
type sink struct{ net.Conn }

func (s sink) Write(b []byte) (int, error) {
	_, _ = s.Conn.Write(b) // a closed connection drops it
	return len(b), nil
}

// closeAll closes both sides of every connection; stop refuses new ones from now on.
func (m *memProxy) closeAll(stop bool) {
	m.mu.Lock()
	conns := m.conns
	m.conns = map[*memnet.Conn]struct{}{}
	if stop {
		m.stopped = true
	}
	m.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}
