package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/clock"
)

type state int

const (
	stateNew state = iota
	stateRunning
	stateStopping
	stateDone // stopped or crashed
)

// Manager holds and polls the endpoints assigned to this instance. Create it with New, run it with
// Start, end it with Stop (graceful) or by cancelling Start's context (crash). A Manager runs once.
type Manager struct {
	client  redis.UniversalClient
	cfg     Config
	id      string
	clock   clock.Clock
	log     *slog.Logger
	keys    keys
	metrics *metrics
	targets TargetSource

	randMu sync.Mutex
	rand   *rand.Rand

	// acquireMu is held for a whole acquire pass, so Stop can wait until none is in flight.
	acquireMu sync.Mutex

	mu          sync.Mutex
	state       state
	held        map[string]*holding
	assigned    map[string]bool      // endpoints this instance is preferred for
	targetSet   map[string]bool      // all current targets
	instances   []string             // live instances at the last discovery
	notified    map[string]time.Time // endpoint -> when another's release of it was announced
	stopRelease []*holding           // holdings ended by Stop, released in one batch
	unhealthy   bool                 // a call got no reply; no writes until a probe is answered (link.go)

	runCtx       context.Context
	runCancel    context.CancelCauseFunc
	unwatch      func() bool // unregisters the crash watcher
	pubsub       *redis.PubSub
	loops        sync.WaitGroup // background loops
	polls        sync.WaitGroup // per-holding goroutines
	acquireKick  chan struct{}
	discoverKick chan struct{}
	renewKick    chan struct{}
}

// New validates cfg, fills in defaults and registers metrics. It does not touch Redis. For bounded
// Redis calls the client should be created with ContextTimeoutEnabled: true.
func New(client redis.UniversalClient, cfg Config) (*Manager, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: client must not be nil", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewSource(cfg.Clock.Now().UnixNano()))
	}
	if cfg.InstanceID == "" {
		host, _ := os.Hostname()
		cfg.InstanceID = NewInstanceID(host, cfg.Clock.Now(), cfg.Rand)
	}
	if cfg.Targets == nil {
		cfg.Targets = &SessionSource{Client: client, Prefix: cfg.SessionPrefix, Logger: cfg.Logger}
	}
	met, err := newMetrics(cfg.Registerer, cfg.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("lease: register metrics: %w", err)
	}
	return &Manager{
		client:       client,
		cfg:          cfg,
		id:           cfg.InstanceID,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		keys:         keys{cfg.KeyPrefix},
		metrics:      met,
		targets:      cfg.Targets,
		rand:         cfg.Rand,
		held:         make(map[string]*holding),
		assigned:     make(map[string]bool),
		targetSet:    make(map[string]bool),
		notified:     make(map[string]time.Time),
		acquireKick:  make(chan struct{}, 1),
		discoverKick: make(chan struct{}, 1),
		renewKick:    make(chan struct{}, 1),
	}, nil
}

// ID returns the instance ID.
func (m *Manager) ID() string { return m.id }

// Held returns the endpoints this instance currently believes it holds (within their local validity
// deadline), sorted.
func (m *Manager) Held() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var out []string
	for ep, h := range m.held {
		if !h.ended && now.Before(h.deadline) {
			out = append(out, ep)
		}
	}
	slices.Sort(out)
	return out
}

// Instances returns the live instances seen at the last discovery round, sorted.
func (m *Manager) Instances() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.instances)
}

// Start connects, registers the instance, reads the fleet and the targets, and starts the background
// work; it returns once that work is running. It fails with an error wrapping ErrUnavailable when Redis
// does not answer within OpTimeout.
//
// Cancelling ctx crashes the manager: every goroutine ends promptly, every poll's context is cancelled
// (cause ErrCrashed), and nothing more is sent to Redis; leases are not released and expire on their
// own, as they would after a process crash.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.state != stateNew {
		m.mu.Unlock()
		return ErrAlreadyStarted
	}
	m.state = stateRunning
	m.runCtx, m.runCancel = context.WithCancelCause(ctx)
	m.mu.Unlock()

	fail := func(err error) error {
		m.mu.Lock()
		m.state = stateDone
		m.mu.Unlock()
		m.runCancel(ErrCrashed)
		if m.pubsub != nil {
			_ = m.pubsub.Close()
		}
		return err
	}
	octx, cancel := m.opCtx()
	err := m.loadScripts(octx)
	if err == nil {
		err = m.heartbeat(octx)
	}
	cancel()
	if err != nil {
		return fail(fmt.Errorf("%w: start instance %s: %w", ErrUnavailable, m.id, err))
	}
	m.pubsub = m.client.Subscribe(m.runCtx, m.keys.channel())
	octx, cancel = m.opCtx()
	_, err = m.pubsub.Receive(octx) // the subscription confirmation
	cancel()
	if err != nil {
		return fail(fmt.Errorf("%w: subscribe %s: %w", ErrUnavailable, m.keys.channel(), err))
	}
	m.discover()
	m.publish("join " + m.id)

	m.unwatch = context.AfterFunc(ctx, m.crash)
	m.metrics.setLinkHealthy(true)
	m.loops.Add(6)
	go m.every(m.cfg.HeartbeatInterval, nil, func() {
		if !m.linkHealthy() {
			return // the probe loop writes the heartbeat once the link answers again
		}
		octx, cancel := m.opCtx()
		defer cancel()
		if err := m.heartbeat(octx); err != nil && m.runCtx.Err() == nil {
			m.log.Warn("lease: heartbeat failed", "instance", m.id, "err", err)
			m.noteErr("heartbeat", err)
		}
	})
	go m.every(m.cfg.DiscoveryInterval, m.discoverKick, m.discover)
	go m.every(m.cfg.RenewInterval, m.acquireKick, m.acquirePass)
	go m.every(m.cfg.RenewInterval, m.renewKick, m.renewPass)
	go m.every(m.cfg.RenewInterval/2, nil, m.probe)
	go m.listen()
	m.kick(m.acquireKick)
	m.log.Info("lease: started", "instance", m.id)
	return nil
}

// Stop shuts the manager down gracefully: no new polls or acquisitions, in-flight polls finish, every
// lease is released (one pipelined batch), the heartbeat is deleted and the fleet is notified so the
// next owners take over at once. If ctx ends before in-flight polls finish, their contexts are
// cancelled (cause ErrReleased) and Stop waits for them to return before releasing.
func (m *Manager) Stop(ctx context.Context) error {
	m.mu.Lock()
	if m.state != stateRunning {
		m.mu.Unlock()
		return ErrNotRunning
	}
	m.state = stateStopping
	for _, h := range m.held {
		h.signal()
	}
	m.mu.Unlock()

	m.acquireMu.Lock() // no acquire pass in flight from here on
	m.acquireMu.Unlock()

	done := make(chan struct{})
	go func() { m.polls.Wait(); close(done) }()
	select {
	case <-done:
	case <-m.runCtx.Done():
		return errors.Join(ErrNotRunning, context.Cause(m.runCtx))
	case <-ctx.Done():
		m.mu.Lock()
		for _, h := range m.held {
			h.cancel(ErrReleased)
		}
		m.mu.Unlock()
		<-done
	}

	m.mu.Lock()
	if m.state != stateStopping { // crashed while waiting
		m.mu.Unlock()
		return ErrNotRunning
	}
	m.state = stateDone
	rel := m.stopRelease
	m.stopRelease = nil
	m.mu.Unlock()
	m.unwatch()

	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.OpTimeout)
	defer cancel()
	err := m.client.Del(octx, m.keys.node(m.id)).Err()
	calls := make([]*scriptCall, len(rel))
	for i, h := range rel {
		calls[i] = m.releaseCall(h.endpoint)
	}
	runBatch(octx, m.client, m.clock.Now, calls)
	for _, sc := range calls {
		err = errors.Join(err, sc.err)
	}
	err = errors.Join(err, m.client.Publish(octx, m.keys.channel(), "stop "+m.id).Err())

	m.runCancel(ErrReleased)
	_ = m.pubsub.Close()
	m.loops.Wait()
	m.metrics.setHeld(0)
	m.log.Info("lease: stopped", "instance", m.id, "released", len(rel))
	if err != nil {
		return fmt.Errorf("lease: stop %s: %w", m.id, err)
	}
	return nil
}

// crash runs when Start's context ends: drop every holding without a word to Redis.
func (m *Manager) crash() {
	m.mu.Lock()
	if m.state == stateDone {
		m.mu.Unlock()
		return
	}
	m.state = stateDone
	for ep, h := range m.held {
		h.ended = true
		h.cancel(ErrCrashed)
		delete(m.held, ep)
	}
	m.stopRelease = nil
	m.mu.Unlock()
	m.runCancel(ErrCrashed)
	if m.pubsub != nil {
		_ = m.pubsub.Close()
	}
	m.log.Info("lease: crashed (context cancelled)", "instance", m.id)
}

// every runs fn every interval (jittered down by up to 10%) and whenever kick fires, until the
// manager's context ends.
func (m *Manager) every(interval time.Duration, kick chan struct{}, fn func()) {
	defer m.loops.Done()
	for {
		t := m.clock.NewTimer(m.jitter(interval))
		select {
		case <-m.runCtx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-kick:
			t.Stop()
		}
		if m.runCtx.Err() != nil {
			return
		}
		fn()
	}
}

func (m *Manager) jitter(d time.Duration) time.Duration {
	m.randMu.Lock()
	f := m.rand.Float64()
	m.randMu.Unlock()
	return d - time.Duration(f*0.1*float64(d))
}

func (m *Manager) kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// opCtx bounds one Redis call by OpTimeout; it ends at once on crash.
func (m *Manager) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.runCtx, m.cfg.OpTimeout)
}

func (m *Manager) heldCountLocked() int { return len(m.held) }

// MarkEstablished creates the dataset epoch key under keyPrefix if it is absent, so that the
// fresh-dataset guard does not hold back the first grants. Call it only when no lease holder from an
// earlier dataset can still be running, e.g. on a first deployment or in tests; it never lifts a guard
// that is already in force.
func MarkEstablished(ctx context.Context, client redis.UniversalClient, keyPrefix string) error {
	return client.SetNX(ctx, keys{keyPrefix}.epoch(), "0", 0).Err()
}
