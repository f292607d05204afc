package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Link is the network path between one instance and the backend, through a toxiproxy proxy. Faults on
// a link affect only that instance. Each fault method replaces whatever fault was in force; Heal
// removes them all.
type Link interface {
	// Addr is the address the instance dials instead of the backend's.
	Addr() string
	// Partition drops all data both ways; connections stay open and hang, as in a real partition.
	Partition() error
	// DropReplies lets requests reach the backend (and take effect) but drops every reply. On embedded
	// links, a Redis connection opened during the fault gets the replies to its handshake (HELLO,
	// CLIENT ...), so a client's re-sends on fresh connections keep landing; a remote
	// toxiproxy-server has no such toxic, and its one-way fault stops new connections at the handshake.
	DropReplies() error
	// Latency delays data both ways by latency ± jitter.
	Latency(latency, jitter time.Duration) error
	// Hold delays one direction by d: requests (towards the backend) when requests is set, else
	// replies. Each chunk is delivered d after it was sent; a connection's later data waits behind it.
	// A non-empty match holds only the chunks that contain it (embedded links only).
	Hold(requests bool, d time.Duration, match string) error
	// EndHold stops holding data sent from now on. On embedded links what is already held is still
	// delivered at its own time; a remote toxiproxy-server delivers it at once.
	EndHold() error
	// Reset closes every open connection and accepts new ones at once; faults in force stay in force.
	Reset() error
	// Kill closes every connection and refuses new ones for good: the instance's process is gone.
	// Nothing, Heal included, reopens a killed link.
	Kill() error
	// Heal removes every fault. It does not reopen a killed link.
	Heal() error
	// Close removes the proxy.
	Close() error
}

// Proxies creates links. Embedded runs toxiproxy in this process; Remote drives a toxiproxy-server.
type Proxies interface {
	// NewLink creates a proxy named name that forwards a free loopback port to upstream.
	NewLink(name, upstream string) (Link, error)
	// Close removes every link it created.
	Close() error
}

// Toxic names used by Tenure's links.
const (
	toxicDropUp   = "tenure_drop_up"
	toxicDropDown = "tenure_drop_down"
	toxicLatency  = "tenure_latency"
	toxicLatDown  = "tenure_latency_down"
	toxicHold     = "tenure_hold"
)

// Embedded runs toxiproxy proxies inside this process.
type Embedded struct {
	server *toxiproxy.ApiServer
	seed   int64

	mu    sync.Mutex
	links []*embeddedLink
}

// NewEmbedded returns an in-process toxiproxy. seed drives the latency jitter.
func NewEmbedded(seed int64) *Embedded {
	registerSeededLatency()
	registerOneWay()
	registerHold()
	m := toxiproxy.NewMetricsContainer(prometheus.NewRegistry())
	return &Embedded{server: toxiproxy.NewServer(m, zerolog.Nop()), seed: seed}
}

// NewLink starts a proxy on a free loopback port.
func (e *Embedded) NewLink(name, upstream string) (Link, error) {
	p := toxiproxy.NewProxy(e.server, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start proxy %s -> %s: %w", name, upstream, err)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	l := &embeddedLink{p: p, seed: e.seed ^ int64(h.Sum64())}
	e.mu.Lock()
	e.links = append(e.links, l)
	e.mu.Unlock()
	return l, nil
}

// Close stops every proxy.
func (e *Embedded) Close() error {
	e.mu.Lock()
	links := e.links
	e.links = nil
	e.mu.Unlock()
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

type embeddedLink struct {
	mu     sync.Mutex
	p      *toxiproxy.Proxy
	seed   int64      // jitter seed of this link
	faults int        // one-way faults applied so far, to name their toxic groups
	oneWay string     // the toxic group of the one-way fault in force, if any
	held   func(Held) // told of the requests a hold delivers late (ObserveHeld)
	killed bool
	closed bool
	// mem, on a link of Virtual, holds its in-memory connections in place of the proxy's listener.
	mem *memProxy
}

func (l *embeddedLink) Addr() string { return l.p.Listen }

// stopProxy closes every connection of the link; a link of Virtual then refuses new ones when kill is
// set, and a real proxy stops listening.
func (l *embeddedLink) stopProxy(kill bool) {
	if l.mem != nil {
		l.mem.closeAll(kill)
		return
	}
	l.p.Stop()
}

func (l *embeddedLink) addToxic(name, typ, stream string, attrs map[string]any) error {
	body, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := l.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		return fmt.Errorf("chaos: add toxic %s to %s: %w", name, l.p.Name, err)
	}
	return nil
}

func (l *embeddedLink) clear() {
	for _, name := range []string{toxicDropUp, toxicDropDown, toxicLatency, toxicLatDown, toxicHold} {
		if l.p.Toxics.GetToxic(name) != nil {
			_ = l.p.Toxics.RemoveToxic(context.Background(), name)
		}
	}
	if l.oneWay != "" {
		dropOneWay(l.oneWay)
		l.oneWay = ""
	}
}

func (l *embeddedLink) Partition() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	return errors.Join(
		l.addToxic(toxicDropUp, "timeout", "upstream", map[string]any{"timeout": 0}),
		l.addToxic(toxicDropDown, "timeout", "downstream", map[string]any{"timeout": 0}),
	)
}

// DropReplies lets the handshake of each new connection through (see oneWay), so that a client's
// retries on fresh connections keep landing while every reply to a command is lost.
func (l *embeddedLink) DropReplies() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	l.faults++
	group := fmt.Sprintf("%s#%d", l.p.Name, l.faults)
	l.oneWay = group
	// The reply side first, then the request side, then arm: a connection accepted before both are in
	// place counts as an old one and loses every reply (see oneWay).
	err := errors.Join(
		l.addToxic(toxicDropDown, oneWayType, "downstream", map[string]any{"group": group}),
		l.addToxic(toxicDropUp, oneWayType, "upstream", map[string]any{"group": group, "requests": true}),
	)
	armOneWay(group)
	return err
}

func (l *embeddedLink) Latency(latency, jitter time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	// Half the delay each way, so a round trip costs latency ± jitter.
	attrs := func(seed int64) map[string]any {
		return map[string]any{"latency": latency.Milliseconds() / 2, "jitter": jitter.Milliseconds() / 2, "seed": seed}
	}
	return errors.Join(
		l.addToxic(toxicLatency, seededLatencyType, "upstream", attrs(l.seed)),
		l.addToxic(toxicLatDown, seededLatencyType, "downstream", attrs(l.seed+1)),
	)
}

func (l *embeddedLink) Hold(requests bool, d time.Duration, match string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	if err := l.addToxic(toxicHold, holdType, direction(requests), map[string]any{"delay": d.Milliseconds(), "match": match}); err != nil {
		return err
	}
	l.observeHold()
	return nil
}

// observeHold gives the hold of requests in force, if any, the link's observer. The toxic runs from
// the moment it is added, before this: what it delivers in between went through on time (a chunk it
// holds is still in hand, and the observer is read when a chunk is delivered).
func (l *embeddedLink) observeHold() {
	w := l.p.Toxics.GetToxic(toxicHold)
	if w == nil || w.Stream != direction(true) || l.held == nil {
		return
	}
	if h, ok := w.Toxic.(*hold); ok {
		f := l.held
		h.observe.Store(&f)
	}
}

func (l *embeddedLink) observeHeld(f func(Held)) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = f
	l.observeHold()
	return true
}

// ObserveHeld asks l to tell f of every request chunk that its holds (Hold with requests set, the
// slow-requests fault) deliver later than they were sent: held for the delay, or queued behind held
// data (see Held). f is called from the link's goroutines, concurrently for different connections and
// in order for each, and must not block: the connection waits for it. It replaces any earlier f. It
// reports whether l can: embedded links can, and a Fanout of links each of which can; a remote
// toxiproxy-server's link cannot (its hold is toxiproxy's own latency toxic), and reports nothing.
func ObserveHeld(l Link, f func(Held)) bool {
	o, ok := l.(interface{ observeHeld(func(Held)) bool })
	return ok && o.observeHeld(f)
}

func (l *embeddedLink) EndHold() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.p.Toxics.GetToxic(toxicHold); w != nil {
		if h, ok := w.Toxic.(*hold); ok {
			h.end(time.Now())
		}
	}
	return nil
}

func direction(requests bool) string {
	if requests {
		return "upstream"
	}
	return "downstream"
}

func (l *embeddedLink) Reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed || l.closed {
		return nil
	}
	// Stopping the proxy closes both sides of every connection; its toxics stay with it.
	if l.mem != nil {
		l.mem.closeAll(false)
		return nil
	}
	l.p.Stop()
	if err := l.p.Start(); err != nil {
		return fmt.Errorf("chaos: reopen proxy %s: %w", l.p.Name, err)
	}
	return nil
}

func (l *embeddedLink) Kill() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.killed && !l.closed {
		l.stopProxy(true)
	}
	l.killed = true
	return nil
}

func (l *embeddedLink) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.killed {
		return nil
	}
	l.clear()
	return nil
}

func (l *embeddedLink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if !l.killed {
		l.stopProxy(true)
	}
	if l.mem != nil {
		// Toxics whose connections are gone still wait in their chains: removed, they end (a
		// virtual-time bubble ends only once every goroutine of it has).
		l.clear()
	}
	if l.oneWay != "" {
		dropOneWay(l.oneWay)
		l.oneWay = ""
	}
	return nil
}

// Remote drives an external toxiproxy-server through its HTTP API.
type Remote struct {
	c *toxiclient.Client

	mu    sync.Mutex
	links []*remoteLink
}

// NewRemote connects to a toxiproxy-server at url ("http://127.0.0.1:8474") and checks that it answers.
func NewRemote(url string) (*Remote, error) {
	c := toxiclient.NewClient(url)
	if _, err := c.Proxies(); err != nil {
		return nil, fmt.Errorf("chaos: toxiproxy-server at %s does not answer (%v): start it or drop --toxiproxy to use the embedded one", url, err)
	}
	return &Remote{c: c}, nil
}

// NewLink creates a proxy on the server, listening on a free loopback port.
func (r *Remote) NewLink(name, upstream string) (Link, error) {
	p, err := r.c.CreateProxy(name, "127.0.0.1:0", upstream)
	if err != nil {
		return nil, fmt.Errorf("chaos: create proxy %s on toxiproxy-server: %w", name, err)
	}
	l := &remoteLink{p: p}
	r.mu.Lock()
	r.links = append(r.links, l)
	r.mu.Unlock()
	return l, nil
}

// Close deletes every proxy it created.
func (r *Remote) Close() error {
	r.mu.Lock()
	links := r.links
	r.links = nil
	r.mu.Unlock()
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

type remoteLink struct {
	mu     sync.Mutex
	p      *toxiclient.Proxy
	killed bool
	closed bool
}

func (l *remoteLink) Addr() string { return l.p.Listen }

func (l *remoteLink) clear() {
	ts, err := l.p.Toxics()
	if err != nil {
		return
	}
	for _, t := range ts {
		_ = l.p.RemoveToxic(t.Name)
	}
}

func (l *remoteLink) add(name, typ, stream string, attrs toxiclient.Attributes) error {
	if _, err := l.p.AddToxic(name, typ, stream, 1, attrs); err != nil {
		return fmt.Errorf("chaos: add toxic %s: %w", name, err)
	}
	return nil
}

func (l *remoteLink) Partition() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	return errors.Join(
		l.add(toxicDropUp, "timeout", "upstream", toxiclient.Attributes{"timeout": 0}),
		l.add(toxicDropDown, "timeout", "downstream", toxiclient.Attributes{"timeout": 0}),
	)
}

func (l *remoteLink) DropReplies() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	return l.add(toxicDropDown, "timeout", "downstream", toxiclient.Attributes{"timeout": 0})
}

func (l *remoteLink) Latency(latency, jitter time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	// A remote server has only its own (unseeded) latency toxic.
	half := toxiclient.Attributes{"latency": latency.Milliseconds() / 2, "jitter": jitter.Milliseconds() / 2}
	return errors.Join(
		l.add(toxicLatency, "latency", "upstream", half),
		l.add(toxicLatDown, "latency", "downstream", half),
	)
}

func (l *remoteLink) Hold(requests bool, d time.Duration, match string) error {
	if match != "" {
		return fmt.Errorf("%w: a toxiproxy-server cannot hold only the data that matches %q; drop --toxiproxy", ErrUnsupported, match)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	return l.add(toxicHold, "latency", direction(requests), toxiclient.Attributes{"latency": d.Milliseconds()})
}

// EndHold removes the delay: toxiproxy-server delivers what it holds at once.
func (l *remoteLink) EndHold() error { return l.Heal() }

func (l *remoteLink) Reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		return nil
	}
	return errors.Join(l.p.Disable(), l.p.Enable())
}

func (l *remoteLink) Kill() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = true
	return l.p.Disable()
}

func (l *remoteLink) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		return nil
	}
	l.clear()
	return nil
}

// Close deletes the proxy, once: a link closed by whoever created it (a topology closes its peer
// links) is closed again by Remote.Close without error.
func (l *remoteLink) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return l.p.Delete()
}

// Compile-time checks that toxiproxy's registry accepts our toxic.
var _ toxics.Toxic = (*seededLatency)(nil)
