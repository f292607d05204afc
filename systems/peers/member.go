package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

// lockLibrary is what differs between the peer libraries: how one endpoint's lock is taken. Everything
// around it (finding targets, polling, refreshing on a jittered interval, letting go) is the same wiring
// for every library, and lives in member.
type lockLibrary interface {
	// obtain makes one attempt to lock key with the given lock value; a nil error means it is held.
	obtain(ctx context.Context, key, value string) (heldLock, error)
}

// heldLock is one lock a library holds.
type heldLock interface {
	// refresh extends the lock by one TTL. A non-empty reason ends the holding: the library could not
	// extend it (the reason is reported with the belief's end).
	refresh(ctx context.Context) (reason string)
	// release gives the lock back.
	release(ctx context.Context)
}

// member is one fleet member wired the way the libraries' READMEs show: every DiscoveryInterval
// (jittered) it tries to lock each target it does not hold, and lets go of targets that are gone; each
// lock it holds is polled every PollInterval and refreshed every RenewInterval (jittered by ±20 %, as
// real fleets are never in lock step); a failed refresh ends the holding without a release.
type member struct {
	cfg sim.InstanceConfig
	lib lockLibrary

	rmu sync.Mutex
	rng *rand.Rand

	mu       sync.Mutex
	held     map[string]*holding
	attempts int // lock attempts so far: lock values are "<instance>:<n>", unique and seeded
	stop     context.CancelFunc
	wg       sync.WaitGroup
}

type holding struct {
	lock   heldLock
	cancel context.CancelFunc
	done   chan struct{} // closed when its poller and refresher have ended
}

func newMember(cfg sim.InstanceConfig, lib lockLibrary) *member {
	return &member{cfg: cfg, lib: lib, rng: rand.New(rand.NewSource(cfg.Seed)), held: map[string]*holding{}}
}

// jittered is d times a factor drawn from [0.8, 1.2].
func (m *member) jittered(d time.Duration) time.Duration {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	return time.Duration(float64(d) * (0.8 + 0.4*m.rng.Float64()))
}

func (m *member) key(ep string) string { return m.cfg.KeyPrefix + "lease:" + ep }

// Start implements sim.Instance.
func (m *member) Start(ctx context.Context) error {
	ctx, m.stop = context.WithCancel(ctx)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for ctx.Err() == nil {
			m.discover(ctx)
			if !clock.Sleep(m.cfg.Clock, m.jittered(m.cfg.Timing.DiscoveryInterval), ctx.Done()) {
				return
			}
		}
	}()
	return nil
}

// discover tries to lock every target it does not hold and lets go of those that are gone.
func (m *member) discover(ctx context.Context) {
	targets, ok := m.targets(ctx)
	if !ok {
		return
	}
	live := map[string]bool{}
	for _, ep := range targets {
		live[ep] = true
		m.mu.Lock()
		_, held := m.held[ep]
		m.mu.Unlock()
		if held {
			continue
		}
		// The value only has to be unique; drawing it from the instance's ID and a counter instead of
		// the libraries' crypto/rand keeps every run reproducible from its seed, and "<instance>:" tells
		// the checker whose holding it names.
		m.attempts++
		cctx, cancel := context.WithTimeout(ctx, m.cfg.Timing.OpTimeout)
		lock, err := m.lib.obtain(cctx, m.key(ep), fmt.Sprintf("%s:%d", m.cfg.ID, m.attempts))
		cancel()
		if err == nil {
			m.hold(ctx, ep, lock)
		}
	}
	m.mu.Lock()
	var gone []string
	for ep := range m.held {
		if !live[ep] {
			gone = append(gone, ep)
		}
	}
	m.mu.Unlock()
	for _, ep := range gone {
		m.release(ctx, ep)
	}
}

// targets lists the sessions that are not paused, by SCAN and GET, as a hand-written fleet would.
func (m *member) targets(ctx context.Context) ([]string, bool) {
	cctx, cancel := context.WithTimeout(ctx, 2*m.cfg.Timing.OpTimeout)
	defer cancel()
	var out []string
	iter := m.cfg.Client.Scan(cctx, 0, m.cfg.SessionPrefix+"*", 1000).Iterator()
	for iter.Next(cctx) {
		b, err := m.cfg.Client.Get(cctx, iter.Val()).Bytes()
		if err != nil {
			continue
		}
		var doc struct {
			Paused bool `json:"paused"`
		}
		if json.Unmarshal(b, &doc) == nil && !doc.Paused {
			out = append(out, strings.TrimPrefix(iter.Val(), m.cfg.SessionPrefix))
		}
	}
	return out, iter.Err() == nil
}

// hold starts polling ep and refreshing its lock; a failed refresh ends both.
func (m *member) hold(ctx context.Context, ep string, lock heldLock) {
	hctx, cancel := context.WithCancel(ctx)
	h := &holding{lock: lock, cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.held[ep] = h
	m.mu.Unlock()
	m.observe(ep, history.Belief{Held: true, Reason: history.ReasonAcquired})
	var pollers sync.WaitGroup
	pollers.Add(1)
	go func() {
		defer pollers.Done()
		for hctx.Err() == nil {
			_ = m.cfg.Poll(hctx, ep, 0)
			if !clock.Sleep(m.cfg.Clock, m.cfg.Timing.PollInterval, hctx.Done()) {
				return
			}
		}
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(h.done)
		defer pollers.Wait()
		for clock.Sleep(m.cfg.Clock, m.jittered(m.cfg.Timing.RenewInterval), hctx.Done()) {
			cctx, ccancel := context.WithTimeout(hctx, m.cfg.Timing.OpTimeout)
			reason := lock.refresh(cctx)
			ccancel()
			if reason != "" && hctx.Err() == nil {
				m.drop(ep, reason)
				return
			}
		}
	}()
}

func (m *member) observe(ep string, b history.Belief) {
	if m.cfg.Observe != nil {
		m.cfg.Observe(ep, b)
	}
}

// drop ends the holding of ep (no release) and reports it.
func (m *member) drop(ep, reason string) *holding {
	m.mu.Lock()
	h := m.held[ep]
	delete(m.held, ep)
	m.mu.Unlock()
	if h != nil {
		h.cancel()
		m.observe(ep, history.Belief{Held: false, Reason: reason})
	}
	return h
}

// release ends the holding, waits for its poll in flight, then releases the lock.
func (m *member) release(ctx context.Context, ep string) {
	h := m.drop(ep, "released")
	if h == nil {
		return
	}
	<-h.done
	cctx, cancel := context.WithTimeout(ctx, m.cfg.Timing.OpTimeout)
	defer cancel()
	h.lock.release(cctx)
}

// Stop implements sim.Instance: release every lock, then end the discovery loop.
func (m *member) Stop(ctx context.Context) error {
	if m.stop == nil {
		return nil
	}
	m.mu.Lock()
	eps := make([]string, 0, len(m.held))
	for ep := range m.held {
		eps = append(eps, ep)
	}
	m.mu.Unlock()
	for _, ep := range eps {
		m.release(ctx, ep)
	}
	m.stop()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
