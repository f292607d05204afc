package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Stopping. A graceful stop hands each endpoint over at its own limit: an endpoint with a poll in
// flight is released as soon as that poll has ended, one with none at once, so that no endpoint waits
// for the slowest poll of the instance. Stop, from Running:
//
//  1. moves to Stopping (no acquire pass or poll starts from here on), ends every holding with no poll
//     in flight and releases it at once; the others end, and queue their release, when their poll
//     returns;
//  2. deletes the heartbeat (after any heartbeat write in flight, so that it stays deleted) and then
//     announces the stop, so that the others read the fleet at once and count this instance out (on
//     one connection, in the round trip of the releases of step 1, after them: see leave);
//  3. once the acquire pass in flight (if any) has ended, queues the release of what it was granted
//     and of every stale value (stale.go);
//  4. waits for the polls in flight (cancelling them when ctx ends), then queues every value left (a
//     stale value that appeared meanwhile, what a crash dropped) and waits for the releases and the
//     announcement.
//
// Each release announces its endpoint, and the others try an endpoint on whichever they hear last, the
// announcement of the stop (it is no longer this instance's) or the release (it is free). Releases
// that are ready together go in one round trip, sent at once, a few round trips at most in flight
// (stopReleases). Every call is bounded by OpTimeout on its own, with ctx's values but not its
// cancellation: once the last poll has ended, the releases take at most two OpTimeouts (a round trip
// in flight, then the rest), and the heartbeat delete and the announcement run beside them. On Redis
// Cluster the heartbeat may live on a primary that does not answer: the releases go to their own
// primaries meanwhile, each shard's in a pipeline of its own (runGroups).

// Stop shuts the manager down gracefully: no new polls or acquisitions, every lease is released as
// soon as its in-flight poll (if any) has finished, together with the values of earlier holdings that
// may still be in Redis (an acquire or renewal whose reply was lost), the heartbeat is deleted (after
// any heartbeat write in flight has ended, so it stays deleted) and the fleet is notified, so the next
// owners take over each endpoint at once. If ctx ends before in-flight polls finish, their contexts are
// cancelled (cause ErrReleased) and Stop waits for them to return before releasing their endpoints.
//
// Stop during Start makes Start give up, then cleans up what Start wrote. Stop after Start's context
// ended (a crash, e.g. the usual signal.NotifyContext passed to Start) still hands over: it waits for
// the cancelled polls to return, then releases the leases the crash left behind, deletes the
// heartbeat and notifies the fleet. It returns ErrNotRunning if the manager never ran or was already
// stopped.
func (m *Manager) Stop(ctx context.Context) error {
	if ok, err := m.stopOverride(ctx); ok {
		return err
	}
	m.mu.Lock()
	switch m.state {
	case stateNew:
		m.mu.Unlock()
		return ErrNotRunning
	case stateStarting:
		m.state = stateStopping
		m.mu.Unlock()
		m.runCancel(ErrReleased)
		<-m.startDone
		m.mu.Lock()
		m.state = stateDone
		m.cleaned = true
		m.mu.Unlock()
		return m.stopped(0, m.leave(ctx, nil, nil).wait())
	case stateDone:
		if !m.crashed || m.cleaned {
			m.mu.Unlock()
			return ErrNotRunning
		}
		m.cleaned = true
		m.mu.Unlock()
		return m.finish(ctx, nil, nil)
	case stateStopping:
		m.mu.Unlock()
		return ErrNotRunning
	}
	m.state = stateStopping
	rel := &stopReleases{m: m, ctx: ctx}
	m.stopRel = rel
	idle := m.endIdleLocked()
	m.mu.Unlock()
	left := m.leave(ctx, rel, idle)

	m.acquireMu.Lock() // no acquire pass in flight from here on
	m.acquireMu.Unlock()
	m.mu.Lock()
	ready := append(m.stopRelease, m.staleLocked()...) // granted while Stop began; stale values
	m.stopRelease = nil
	m.mu.Unlock()
	rel.add(ready...)

	done := make(chan struct{})
	go func() { m.polls.Wait(); close(done) }()
	select {
	case <-done:
	case <-m.runCtx.Done(): // Start's context ended (the crash watcher may not have run yet)
		m.mu.Lock()
		m.crashed = true
		m.dropLocked()
		m.mu.Unlock()
	case <-ctx.Done():
		m.mu.Lock()
		for _, s := range m.slots {
			if s.h != nil {
				s.h.cancel(ErrReleased)
			}
		}
		m.mu.Unlock()
		<-done // the poll loops end their holdings (Stopping) and queue their releases
	}
	m.mu.Lock()
	m.state = stateDone
	m.cleaned = true
	m.mu.Unlock()
	m.unwatch()
	return m.finish(ctx, rel, left)
}

// endIdleLocked ends, for Stop, every holding with no poll in flight and returns them; the others are
// woken, to end when their poll returns (pollLoop). m.mu must be held.
func (m *Manager) endIdleLocked() []*holding {
	var idle []*holding
	for _, s := range m.slots {
		h := s.h
		switch {
		case h == nil || h.ended:
		case h.polling.Load() || m.releaseSent(h):
			h.signal()
		default:
			m.endLocked(h, EventReleased, ReasonStopped, ErrReleased, epReleasing, false)
			idle = append(idle, h)
		}
	}
	return idle
}

// finish releases what Stop or a crash left behind once every poll has returned, ends the background
// work, and completes the heartbeat delete and announcement. The state is already Done. rel and left
// are what a graceful Stop started (nil after a crash: everything is ready at once).
func (m *Manager) finish(ctx context.Context, rel *stopReleases, left *leaving) error {
	m.polls.Wait() // every poll has returned and queued its release
	if rel == nil {
		rel = &stopReleases{m: m, ctx: ctx}
	}
	m.mu.Lock()
	rest := append(m.stopRelease, m.staleLocked()...)
	m.stopRelease = nil
	m.mu.Unlock()
	rel.add(rest...)
	if left == nil {
		left = m.leave(ctx, nil, nil)
	}
	err := left.wait() // first: it may carry releases
	n, rerr := rel.wait()
	m.endLoops()
	return m.stopped(n, errors.Join(rerr, err))
}

// endLoops ends the background loops and waits for them.
func (m *Manager) endLoops() {
	m.runCancel(ErrReleased)
	m.closeSub()
	m.loops.Wait()
}

// stopped ends Stop: n values were released; err joins the errors of its calls.
func (m *Manager) stopped(n int, err error) error {
	m.metrics.setHeld(0)
	m.log.Info("lease: stopped", "instance", m.id, "released", n)
	if err != nil {
		return fmt.Errorf("lease: stop %s: %w", m.id, err)
	}
	return nil
}

// stopStep bounds one of Stop's calls by OpTimeout, with ctx's values but not its cancellation.
func (m *Manager) stopStep(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), m.cfg.OpTimeout)
}

// leaving is Stop's heartbeat delete and stop announcement, under way.
type leaving struct {
	done chan struct{}
	err  error
}

func (l *leaving) wait() error {
	<-l.done
	return l.err
}

// leave deletes the heartbeat, after any heartbeat write in flight has ended, and then announces the
// stop: it is what makes the others read the fleet and count this instance out, and it is the longer
// way to a takeover (the announcement, their discovery round, their acquire), so it is sent first. On
// one connection the releases of first (accounted in rel), the delete and the announcement go in one
// round trip, in that order (Redis runs a pipeline in order): the others then find those endpoints
// free when they try them. A ClusterClient sends them to their own nodes, so there first goes to rel
// and the announcement waits for the delete's reply. Each round trip is bounded on its own (stopStep).
func (m *Manager) leave(ctx context.Context, rel *stopReleases, first []*holding) *leaving {
	l := &leaving{done: make(chan struct{})}
	_, cluster := m.client.(*redis.ClusterClient)
	if cluster {
		rel.add(first...)
		first = nil
	}
	go func() {
		defer close(l.done)
		m.hbMu.Lock() // a heartbeat write in flight ends before the delete
		m.hbMu.Unlock()
		node, channel, msg := m.keys.node(m.id), m.keys.channel(), "stop "+m.id
		step := func() (context.Context, context.CancelFunc) { return m.stopStep(ctx) }
		if !cluster {
			del := &scriptCall{plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
				return p.Del(ctx, node).Result
			}}
			pub := &scriptCall{plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
				return p.Publish(ctx, channel, msg).Result
			}}
			errs := m.releaseBatch(step, first, del, pub)
			if len(first) > 0 {
				rel.done(len(first), errs)
			}
			l.err = errors.Join(del.err, pub.err)
			return
		}
		octx, cancel := step()
		err := m.client.Del(octx, node).Err()
		cancel()
		octx, cancel = step()
		l.err = errors.Join(err, m.client.Publish(octx, channel, msg).Err())
		cancel()
	}()
	return l
}

// stopSenders is how many of Stop's release round trips may be in flight at once. A release made ready
// while another round trip is on the wire goes out at once in a round trip of its own, rather than
// waiting for that one's reply: on a slow link (a reply 150 ms away) waiting would add the other's
// remainder to its handoff. Few, though: a stop of thousands of endpoints whose polls end one by one
// must not take the connection pool from the renewals of the polls still in flight, so beyond that
// the releases made ready meanwhile share the next round trip.
const stopSenders = 4

// stopReleases sends Stop's releases as their endpoints become ready: those added together in one
// round trip (acquireChunk per round trip), each bounded on its own (stopStep), at most stopSenders
// at once; those added while every sender is busy go together in the next.
type stopReleases struct {
	m   *Manager
	ctx context.Context // Stop's

	mu      sync.Mutex
	queue   []*holding
	senders int // running
	sent    int
	err     error
	wg      sync.WaitGroup
}

// add queues hs for release. Every add comes before wait.
func (r *stopReleases) add(hs ...*holding) {
	if len(hs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, hs...)
	if r.senders < stopSenders {
		r.senders++
		r.wg.Add(1)
		go r.send()
	}
}

// send releases what is queued, round trip after round trip, until nothing is.
func (r *stopReleases) send() {
	defer r.wg.Done()
	step := func() (context.Context, context.CancelFunc) { return r.m.stopStep(r.ctx) }
	for {
		r.mu.Lock()
		q := r.queue
		r.queue = nil
		if len(q) == 0 {
			r.senders--
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.done(len(q), r.m.releaseBatch(step, q))
	}
}

// done counts n releases sent, with their errors.
func (r *stopReleases) done(n int, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent += n
	r.err = errors.Join(append([]error{r.err}, errs...)...)
}

// wait returns, once every queued release has returned, how many were sent and their errors (those
// leave sent included, once it has returned).
func (r *stopReleases) wait() (int, error) {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent, r.err
}

// crash runs when Start's context ends: drop every holding without a word to Redis. The values that
// may still be in Redis are kept for a later Stop.
func (m *Manager) crash() {
	m.mu.Lock()
	if m.state == stateDone {
		m.mu.Unlock()
		return
	}
	m.state = stateDone
	m.crashed = true
	m.dropLocked()
	m.mu.Unlock()
	m.runCancel(ErrCrashed)
	m.closeSub()
	// Not a crash yet: a Stop that follows (signal.NotifyContext, then Stop) releases what was held.
	m.log.Info("lease: start context ended: stopped polling; Stop releases the leases, without Stop they expire", "instance", m.id)
}

// dropLocked ends every belief at once (cause ErrCrashed), reporting nothing, and keeps every value
// that may be in Redis in stopRelease. m.mu must be held.
func (m *Manager) dropLocked() {
	for ep, s := range m.slots {
		switch {
		case s.h != nil && !s.h.ended:
			s.h.ended = true
			m.heldCount--
			s.h.cancel(ErrCrashed)
			m.stopRelease = append(m.stopRelease, s.h)
		case s.state == epAcquiring || s.state == epReleasing:
			m.stopRelease = append(m.stopRelease, &holding{endpoint: ep, value: s.value})
		}
		// Those of an acquiring slot had their releases in flight with the acquire.
		m.stopRelease = append(m.stopRelease, staleHoldings(ep, s)...)
		delete(m.slots, ep)
	}
}
