package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/history"
)

// WireConfig configures a WireRecorder.
type WireConfig struct {
	// Recorder receives the events and counts; required.
	Recorder *history.Recorder
	// Instance is the instance whose traffic this is; required.
	Instance string
	// Node names the node of a deployment this traffic goes to (history.Op.Node); empty for the backend
	// as one.
	Node string
	// Upstream is the address traffic is forwarded to: the instance's fault link. Required unless Dial
	// is set.
	Upstream string
	// Dial, when set, opens each upstream connection instead of dialling Upstream over TCP.
	Dial func(ctx context.Context) (net.Conn, error)
	// DialTimeout bounds each upstream dial. Default 5 s.
	DialTimeout time.Duration
	// Classifier says what commands mean in the lease model, as for the in-process hook (a System's
	// OpClassifier, or a *ScriptCatalogue); nil leaves only the built-in classifier. A classifier with a
	// LearnScript(body string) method (ScriptCatalogue) is told every script body seen on the wire.
	Classifier OpClassifier
	// KeyPrefix is the system's key prefix: the built-in classifier models plain commands on
	// <KeyPrefix>lease:<endpoint> keys.
	KeyPrefix string
	// LibraryPrefix is what the system's library puts before every name it is given (a system file's
	// "keys": {"prefix"}): the built-in classifier then models <LibraryPrefix><KeyPrefix>lease:<endpoint>.
	LibraryPrefix string
	// NoteUnplaced records (once) a write on a key the recorder could not model, with how to map it.
	NoteUnplaced bool
	// Dead, when set, reports that the instance has crashed: commands it still sends are forwarded but
	// not recorded, as the hook does not record a dead instance's leftovers.
	Dead func() bool
	// OnFault, when set, is told of every piece of traffic the recorder cannot read (what Err reports),
	// as it happens.
	OnFault func(error)

	// wire, when set, is shown every command as it is read from the client and every reply as it is
	// matched to its command, before either is passed on (an armed chaos.WirePause); when it froze the
	// instance at a command, the connection's requests wait on hold before they are forwarded.
	wire func(name string, reply bool) bool
	hold func()

	_ struct{}
}

// WireRecorder records an instance's Redis traffic at the wire. It listens on a loopback port; the
// instance connects there instead of to its fault link, and every connection is forwarded to the link,
// byte for byte, both ways. On the way it decodes both directions (RESP2 and RESP3) and records every
// command as the in-process hook would (the same classification, bookkeeping counts and WAIT
// verdicts): the call when the command has been read in full from the client, the return when its
// reply has been read from the server, both before the bytes are passed on.
//
// Replies are matched to commands in order per connection, pipelines included; a transaction's queued
// commands get their outcomes from EXEC's reply (an EXECABORT, or a nil after a WATCH abort, means they
// did not run); RESP3 pushes and RESP2 pub/sub messages are not replies; HELLO switches the protocol.
// A batch is what a connection sends while earlier commands are unanswered (a pipeline, as the wire
// shows one): a WAIT judges the writes before it in its batch, and a connection that closes with a
// batch outstanding leaves all of it unknown, the answered commands too, as a client fails a whole
// pipeline when a reply is lost (and as the hook records it).
//
// Where the wire and the hook differ: a client library that re-sends a command after a lost reply
// shows as two calls at the wire (the first unknown), one in the hook, which wraps go-redis's retries;
// a call go-redis fails before writing it (its connection's handshake or the wait for a pooled
// connection timed out) is an unknown call in the hook and nothing at the wire, where it never came;
// and a transaction that did not run fails MULTI too in go-redis, not at the wire.
//
// Traffic the recorder cannot read (not RESP, or over resp.Limits) is still forwarded unchanged; the
// commands it can no longer match are recorded unknown, and Err reports what went wrong.
type WireRecorder struct {
	cfg  WireConfig
	ops  opRecorder
	ln   net.Listener
	stop context.CancelFunc // ends the dials under way when the recorder closes
	base context.Context

	mu     sync.Mutex
	conns  map[*wireConn][2]net.Conn
	next   int
	closed bool
	faults []error
	wg     sync.WaitGroup
}

// maxFaults bounds the decoding errors a recorder keeps for Err.
const maxFaults = 16

// NewWireRecorder starts a recorder listening on a free loopback port (Addr).
func NewWireRecorder(cfg WireConfig) (*WireRecorder, error) {
	switch {
	case cfg.Recorder == nil:
		return nil, errors.New("sim: wire recorder: no history.Recorder to record into")
	case cfg.Instance == "":
		return nil, errors.New("sim: wire recorder: no instance ID")
	case cfg.Upstream == "" && cfg.Dial == nil:
		return nil, fmt.Errorf("sim: wire recorder of %s: no upstream address (the instance's link) to forward to", cfg.Instance)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sim: wire recorder of %s: listen: %w", cfg.Instance, err)
	}
	base, stop := context.WithCancel(context.Background())
	w := &WireRecorder{cfg: cfg, ln: ln, base: base, stop: stop, conns: map[*wireConn][2]net.Conn{},
		ops: opRecorder{instance: cfg.Instance, node: cfg.Node, rec: cfg.Recorder, classifier: cfg.Classifier,
			defaults: defaultClassifier{leasePrefix: cfg.LibraryPrefix + cfg.KeyPrefix + "lease:"}}}
	if cfg.NoteUnplaced {
		w.ops.unplaced = &unplacedKeys{keyPrefix: cfg.KeyPrefix, libPrefix: cfg.LibraryPrefix}
	}
	w.wg.Add(1)
	go w.accept()
	return w, nil
}

// Addr is the loopback address the instance connects to.
func (w *WireRecorder) Addr() string { return w.ln.Addr().String() }

// Err reports the traffic the recorder could not read, if any: a client that sent what is not a
// Redis command, or a server stream that is not RESP (or is over its limits). Nil when all was read.
func (w *WireRecorder) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.faults...)
}

func (w *WireRecorder) fault(err error) {
	w.mu.Lock()
	if len(w.faults) < maxFaults {
		w.faults = append(w.faults, err)
	}
	w.mu.Unlock()
	if w.cfg.OnFault != nil {
		w.cfg.OnFault(err)
	}
}

// learn passes a script body seen on the wire to the classifier, if it learns bodies.
func (w *WireRecorder) learn(body string) {
	if l, ok := w.cfg.Classifier.(interface{ LearnScript(string) }); ok {
		l.LearnScript(body)
	}
}

// Close stops listening and closes every connection, both ways; the commands still waiting for their
// replies are recorded with an unknown outcome. It returns once everything is recorded.
func (w *WireRecorder) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.stop()
	err := w.ln.Close()
	for _, pair := range w.conns {
		_ = pair[0].Close()
		_ = pair[1].Close()
	}
	w.mu.Unlock()
	w.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (w *WireRecorder) accept() {
	defer w.wg.Done()
	for {
		client, err := w.ln.Accept()
		if err != nil {
			return // closed
		}
		w.wg.Add(1)
		go w.serve(client)
	}
}

// serve forwards one client connection until either side closes it.
func (w *WireRecorder) serve(client net.Conn) {
	defer w.wg.Done()
	ctx, cancel := context.WithTimeout(w.base, w.cfg.DialTimeout)
	up, err := w.dial(ctx)
	cancel()
	if err != nil {
		// The link refuses: so does the recorder, with a reset rather than an orderly close.
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = client.Close()
		return
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		_ = client.Close()
		_ = up.Close()
		return
	}
	w.next++
	c := newWireConn(w, w.next)
	w.conns[c] = [2]net.Conn{client, up}
	w.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		pumpUntil(client, up, func(p []byte) bool {
			ok := c.requests(p)
			if c.takeHold() && w.cfg.hold != nil {
				// The chunk holding the command the pause waited for leaves when the instance wakes,
				// with whatever was written with it.
				w.cfg.hold()
			}
			return ok
		})
		_ = up.Close()
		_ = client.Close()
	}()
	pumpUntil(up, client, func(p []byte) bool { c.replies(p); return true })
	_ = up.Close()
	_ = client.Close()
	<-done
	c.closed()
	w.mu.Lock()
	delete(w.conns, c)
	w.mu.Unlock()
}

func (w *WireRecorder) dial(ctx context.Context) (net.Conn, error) {
	if w.cfg.Dial != nil {
		return w.cfg.Dial(ctx)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", w.cfg.Upstream)
}

// pumpUntil copies from src to dst, showing each chunk to see before passing it on, until either
// fails or see refuses a chunk.
func pumpUntil(src, dst net.Conn, see func([]byte) bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !see(buf[:n]) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
