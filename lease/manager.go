package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/clock"
)

// lifecycle is the manager's state. Its transitions are guarded by Manager.mu:
//
//	New --Start--> Starting --connected--> Running --Stop--> Stopping --released--> Done
//	Starting --Stop--> Stopping (Start gives up, Stop cleans up)
//	Starting --Start's ctx ends--> Done (Start returns ErrUnavailable)
//	Running, Stopping --Start's ctx ends--> Done (crash; a later Stop still releases, see Stop)
type lifecycle int

const (
	stateNew lifecycle = iota
	stateStarting
	stateRunning
	stateStopping
	stateDone
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
	// hbMu is held while a heartbeat is written, so Stop's delete of the heartbeat comes after any
	// heartbeat write in flight.
	hbMu sync.Mutex

	mu        sync.Mutex
	state     lifecycle
	slots     map[string]*slot     // endpoint -> its state here; absent = free with nothing stale
	assigned  map[string]bool      // endpoints this instance is preferred for
	targetSet map[string]bool      // all current targets
	instances []string             // live instances at the last discovery
	notified  map[string]time.Time // endpoint -> when another's release of it was announced
	// refusedUntil: endpoint -> when the lease that last refused this instance expires in Redis (its
	// PTTL, read after the refusal). Acquire passes leave the endpoint out until then, unless its
	// release is announced first (takeover.go).
	refusedUntil map[string]time.Time
	stopRelease  []*holding    // values granted while Stop began, or dropped by a crash, for Stop to release
	stopRel      *stopReleases // Stop's releases, from Stopping on (stop.go)
	relMu        sync.Mutex
	relQueue     []queuedRelease // handoffs waiting for the release loop (holding.go)
	crashed      bool            // Start's context ended while running: Stop still cleans up
	cleaned      bool            // Stop's clean-up has run
	unhealthy    bool            // a call got no reply; no writes until a probe is answered (link.go)
	// Every recovery of the link replaces pubsub (subscription.go) and kicks subKick, so that listen
	// moves to the new one. subAt is when the current one was confirmed; subStale is set while a
	// replacement is owed (the last one failed); subClosed once the manager's end has closed it (no
	// new one after that).
	subAt    time.Time
	subStale bool
	// lastBeat is when the last heartbeat answered was sent, on the instance's clock (hbMu guards it):
	// its key may expire HeartbeatTTL after that, so a heartbeat sent more than HeartbeatTTL after it
	// makes the instance announce itself again.
	lastBeat  time.Time
	subClosed bool
	subKick   chan struct{}
	// cc is the client when it is a ClusterClient and the layout is the cluster one: link health is
	// then judged per primary (link.go), and downNodes holds the primaries that left a call without a
	// reply (address -> a key one of those calls named), to which no acquire or renewal is sent until
	// a probe finds them answering or their slots served by another node.
	cc          *redis.ClusterClient
	downNodes   map[string]string
	boot        string    // nonce prefix, from the clock at Start
	guardLogged time.Time // the fresh-dataset guard last logged ends by then (guardlog.go)
	attempts    uint64    // acquire attempts so far (nonce suffix)
	heldCount   int       // holdings whose belief has not ended
	guardUntil  time.Time // the fresh-dataset guard refuses every grant until then (guard.go)
	// epochTTL is how long a per-endpoint epoch key (cluster layout) outlives the last grant or
	// renewal that refreshed it (guard.go): Config.fenceTTL, shortened only by tests.
	epochTTL time.Duration

	runCtx       context.Context
	runCancel    context.CancelCauseFunc
	startDone    chan struct{} // closed when Start returns
	unwatch      func() bool   // unregisters the crash watcher
	pubsub       *redis.PubSub
	loops        sync.WaitGroup // background loops
	polls        sync.WaitGroup // per-holding goroutines and releases
	acquireKick  chan struct{}
	discoverKick chan struct{}
	wakeKick     chan struct{} // fleetWake's: a round that reads only the heartbeats due to expire
	prepareKick  chan struct{} // prepareWake's: compute the assignment that fleetWake's round may need
	renewKick    chan struct{}
	relKick      chan struct{} // the release loop's: releases are queued
	// takeover fires an acquire pass when a lease that refused this instance expires in Redis;
	// fleetWake fires a discovery round when the first other instance's heartbeat expires (takeover.go).
	takeover    *alarm
	fleetWake   *alarm
	prepareWake *alarm
	// disc is what discovery rounds remember (coalesced announcements, the fleet last read);
	// lastAssign is what the current assignment was computed from (discovery.go; guarded by mu).
	disc       discoveryState
	lastAssign assignment
	// share keeps the targets' hash order between assignments (assign.go); shareMu is held while it
	// is used, so that concurrent discovery rounds (the loop's and a link recovery's) do not mix.
	shareMu sync.Mutex
	share   ownShare
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
	if err := checkWaitClient(client, cfg); err != nil {
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
		cfg.Targets = &SessionSource{Client: client, Prefix: cfg.SessionPrefix, ResyncInterval: cfg.SessionResync,
			Clock: cfg.Clock, Logger: cfg.Logger}
	}
	met, err := newMetrics(cfg.Registerer, cfg.InstanceID)
	if err != nil {
		return nil, fmt.Errorf("lease: register metrics: %w", err)
	}
	m := &Manager{
		client:       client,
		cfg:          cfg,
		id:           cfg.InstanceID,
		clock:        cfg.Clock,
		log:          cfg.Logger,
		keys:         newKeys(cfg.KeyPrefix, cfg.KeyLayout),
		metrics:      met,
		targets:      cfg.Targets,
		rand:         cfg.Rand,
		slots:        make(map[string]*slot),
		assigned:     make(map[string]bool),
		targetSet:    make(map[string]bool),
		notified:     make(map[string]time.Time),
		refusedUntil: make(map[string]time.Time),
		startDone:    make(chan struct{}),
		acquireKick:  make(chan struct{}, 1),
		discoverKick: make(chan struct{}, 1),
		wakeKick:     make(chan struct{}, 1),
		prepareKick:  make(chan struct{}, 1),
		renewKick:    make(chan struct{}, 1),
		relKick:      make(chan struct{}, 1),
		subKick:      make(chan struct{}, 1),
		epochTTL:     cfg.fenceTTL(),
	}
	if cc, ok := client.(*redis.ClusterClient); ok && m.keys.cluster {
		m.cc, m.downNodes = cc, map[string]string{}
	}
	m.takeover = newAlarm(cfg.Clock, m.acquireKick)
	m.fleetWake = newAlarm(cfg.Clock, m.wakeKick)
	m.prepareWake = newAlarm(cfg.Clock, m.prepareKick)
	return m, nil
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
	for ep, s := range m.slots {
		if h := s.h; h != nil && !h.ended && (!m.keepsDeadline() || now.Before(h.deadline)) {
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
// work; it returns once that work is running. While Redis does not answer it retries, with a backoff
// that doubles from 100ms up to RenewInterval (jittered), logging each failure ("start attempt
// failed", warn) and counting it (tenure_lease_start_retries_total), until ctx ends; it then fails
// with an error wrapping ErrUnavailable. Stop during Start makes Start give up (ErrNotRunning).
//
// ctx is the manager's lifetime: cancelling it crashes the manager. Every goroutine ends promptly,
// every poll's context is cancelled (cause ErrCrashed), and nothing more is sent to Redis; leases
// expire on their own, as after a process crash, unless Stop is called afterwards (see Stop).
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.state != stateNew {
		m.mu.Unlock()
		return ErrAlreadyStarted
	}
	m.state = stateStarting
	m.runCtx, m.runCancel = context.WithCancelCause(ctx)
	m.boot = strconv.FormatInt(m.clock.Now().UnixNano(), 36)
	m.mu.Unlock()
	defer close(m.startDone)

	err := m.connect()
	m.mu.Lock()
	if m.state == stateStopping {
		err = fmt.Errorf("%w: stopped during start", ErrNotRunning)
	}
	if err != nil {
		if m.state == stateStarting {
			m.state = stateDone
		}
		m.mu.Unlock()
		m.runCancel(ErrCrashed)
		m.closeSub()
		return err
	}
	m.state = stateRunning
	m.unwatch = context.AfterFunc(ctx, m.crash)
	m.mu.Unlock()

	m.metrics.setLinkHealthy(true)
	m.loops.Add(10)
	go func() { defer m.loops.Done(); m.takeover.run(m.runCtx.Done()) }()
	go func() { defer m.loops.Done(); m.fleetWake.run(m.runCtx.Done()) }()
	go func() { defer m.loops.Done(); m.prepareWake.run(m.runCtx.Done()) }()
	go m.every(m.cfg.HeartbeatInterval, nil, m.heartbeatTick)
	go m.discoveryLoop()
	go m.every(m.cfg.RenewInterval, m.acquireKick, m.acquirePass)
	go m.every(m.cfg.RenewInterval, m.renewKick, m.renewPass)
	go m.every(m.cfg.RenewInterval/2, nil, m.probe)
	go m.listen()
	go m.releaseLoop()
	m.kick(m.acquireKick)
	m.log.Info("lease: started", "instance", m.id)
	return nil
}

// connect runs the start-up calls until they succeed or the manager's context ends.
func (m *Manager) connect() error {
	backoff := min(100*time.Millisecond, m.cfg.RenewInterval)
	for attempt := 1; ; attempt++ {
		err := m.connectOnce()
		if err == nil {
			return nil
		}
		if m.runCtx.Err() != nil {
			return fmt.Errorf("%w: start instance %s (%d attempts): %w", ErrUnavailable, m.id, attempt,
				errors.Join(err, context.Cause(m.runCtx)))
		}
		m.metrics.startRetry()
		m.randMu.Lock()
		wait := backoff/2 + time.Duration(m.rand.Int63n(int64(backoff/2)+1))
		m.randMu.Unlock()
		m.log.Warn("lease: start attempt failed", "instance", m.id, "attempt", attempt, "retry_in", wait, "err", err)
		t := m.clock.NewTimer(wait)
		select {
		case <-m.runCtx.Done():
			t.Stop()
		case <-t.C():
		}
		backoff = min(2*backoff, m.cfg.RenewInterval)
	}
}

// connectOnce loads the scripts, subscribes, writes the heartbeat, reads the fleet and announces this
// instance. The heartbeat comes last of the calls that can fail the attempt: the fleet assigns
// endpoints to every instance whose heartbeat it reads, so a heartbeat written by an attempt that
// then failed would leave them unpolled until it expired (the attempt's deletes it when it can).
func (m *Manager) connectOnce() error {
	octx, cancel := m.opCtx()
	err := m.loadScripts(octx)
	cancel()
	if err != nil {
		return err
	}
	ps, err := m.subscribe()
	if err != nil {
		return err
	}
	octx, cancel = m.opCtx()
	err = m.heartbeat(octx)
	cancel()
	if err != nil {
		// It may have landed: take it back, so that nobody hands endpoints to an instance that is not
		// running (best effort; otherwise it expires after HeartbeatTTL).
		octx, cancel = m.opCtx()
		_ = m.client.Del(octx, m.keys.node(m.id)).Err()
		cancel()
		_ = ps.Close()
		return err
	}
	m.mu.Lock()
	m.pubsub, m.subAt = ps, m.clock.Now()
	m.mu.Unlock()
	m.discover()
	m.publish("join " + m.id)
	return nil
}

// discoveryLoop runs a discovery round every DiscoveryInterval (jittered down by up to 10%) and when
// an announcement asks for one, and a round of the heartbeats due to expire when fleetWake fires,
// until the manager's context ends.
func (m *Manager) discoveryLoop() {
	defer m.loops.Done()
	for {
		t := m.clock.NewTimer(m.jitter(m.cfg.DiscoveryInterval))
		due := false
		select {
		case <-m.runCtx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-m.discoverKick:
			t.Stop()
		case <-m.wakeKick:
			t.Stop()
			due = true
		case <-m.prepareKick:
			t.Stop()
			m.prepareTakeover() // then wait for the round itself
			continue
		}
		if m.runCtx.Err() != nil {
			return
		}
		m.discoverRound(due)
	}
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

// phase returns a duration drawn uniformly from (0, d]: a random phase within one period of d.
func (m *Manager) phase(d time.Duration) time.Duration {
	m.randMu.Lock()
	f := m.rand.Float64()
	m.randMu.Unlock()
	return d - time.Duration(f*float64(d))
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

func (m *Manager) heldCountLocked() int { return m.heldCount }

// heartbeatTick writes the heartbeat while the manager runs and the link is healthy.
func (m *Manager) heartbeatTick() {
	if gap, lapsed := m.heartbeatOnce(); lapsed {
		m.rejoin(gap)
	}
}

// heartbeatOnce writes the heartbeat, if the link allows, and reports whether the last one written
// before it is more than HeartbeatTTL old (on this instance's clock): the heartbeat may have expired
// meanwhile, and the others may have counted this instance gone.
func (m *Manager) heartbeatOnce() (time.Duration, bool) {
	m.hbMu.Lock()
	defer m.hbMu.Unlock()
	m.mu.Lock()
	ok := m.heartbeatLive() && !m.unhealthy
	m.mu.Unlock()
	if !ok {
		return 0, false // the probe loop writes the heartbeat once the link answers again
	}
	key := m.keys.node(m.id)
	if m.nodeDownFor(key) {
		return 0, false // per-primary link health: no blind heartbeat to a primary marked down (link.go)
	}
	octx, cancel := m.opCtx()
	defer cancel()
	last := m.lastBeat
	if err := m.heartbeat(octx); err != nil {
		if m.runCtx.Err() == nil {
			m.log.Warn("lease: heartbeat failed", "instance", m.id, "err", err)
			if m.cc != nil && linkFailure(err) {
				m.noteNodeDown("heartbeat", nodeOf(octx, m.cc, key), key, err)
			}
			m.noteErr("heartbeat", err)
		}
		return 0, false
	}
	gap := m.lastBeat.Sub(last)
	return gap, !last.IsZero() && gap >= m.cfg.HeartbeatTTL
}

// rejoin follows a heartbeat written more than HeartbeatTTL after the last one, with no call of the
// instance's failing meanwhile (a pause of the process, a starved heartbeat loop): the others may have
// counted it gone, taken its share and stopped telling it anything, and a Redis restart meanwhile may
// have closed its subscription without a word to it. It does what a link recovery does (link.go): a
// new subscription, a discovery round, a heartbeat, then an announcement, so that the others rebalance now rather
// than at their periodic rescan (nodeRescanRounds DiscoveryIntervals later), and their releases reach
// it.
func (m *Manager) rejoin(gap time.Duration) {
	m.log.Info("lease: heartbeat lapsed: announcing this instance again", "instance", m.id, "gap", gap)
	m.resubscribe("heartbeat lapsed")
	if err := m.refresh(); err != nil {
		m.log.Debug("lease: discovery after a lapsed heartbeat failed", "instance", m.id, "err", err)
	}
	m.mu.Lock()
	running := m.state == stateRunning
	m.mu.Unlock()
	if !running {
		return
	}
	// The heartbeat whose reply showed the lapse may have landed long before the reply was read (a
	// pause that began with it in flight), and expired since: the others, told of the return, read the
	// heartbeat, and must find a live one.
	m.heartbeatOnce()
	m.publish("join " + m.id)
	m.kick(m.renewKick)
	m.kick(m.acquireKick)
}

// MarkEstablished creates the dataset epoch key under keyPrefix if it is absent, bound to the
// server's current run (see the package doc), so that the fresh-dataset guard does not hold back the
// first grants. Call it only when no lease holder from an earlier dataset can still be running, e.g.
// on a first deployment or in tests; it never lifts a guard that is already in force.
func MarkEstablished(ctx context.Context, client redis.UniversalClient, keyPrefix string) error {
	return establishScript.Run(ctx, client, []string{keys{prefix: keyPrefix}.epoch("")}).Err()
}
