//go:build tenure_mutants

package lease

import (
	"context"
	"errors"

	"github.com/tenurelabs/tenure/internal/mutation"
)

// The lifecycle mutants: Stop as it was before its transitions were guarded. It is Stop with one
// guard removed per mutant, kept whole here so that stop.go carries none of them.

// stopOverride runs stopUnguarded in place of Stop when a lifecycle mutant is switched on.
func (m *Manager) stopOverride(ctx context.Context) (bool, error) {
	if !m.without(mutation.StopAfterCancelAbandons) && !m.without(mutation.StopHeartbeatRewrite) &&
		!m.without(mutation.StopDuringStartUnguarded) {
		return false, nil
	}
	return true, m.stopUnguarded(ctx)
}

// stopUnguarded is Stop, where
//   - stop-during-start-unguarded takes the running path during Start, and panics on the crash
//     watcher Start has not registered yet;
//   - stop-after-cancel-abandons, after Start's context ended, releases nothing: the crash wins;
//   - stop-heartbeat-rewrite sends the idle holdings' releases on their own and leaves the heartbeat
//     to finishUnguarded.
func (m *Manager) stopUnguarded(ctx context.Context) error {
	m.mu.Lock()
	switch m.state {
	case stateNew:
		m.mu.Unlock()
		return ErrNotRunning
	case stateStarting:
		if m.without(mutation.StopDuringStartUnguarded) {
			break // the running path
		}
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
		if m.crashed && m.without(mutation.StopAfterCancelAbandons) {
			m.mu.Unlock()
			return errors.Join(ErrNotRunning, context.Cause(m.runCtx))
		}
		if !m.crashed || m.cleaned {
			m.mu.Unlock()
			return ErrNotRunning
		}
		m.cleaned = true
		m.mu.Unlock()
		return m.finishUnguarded(ctx, nil, nil)
	case stateStopping:
		m.mu.Unlock()
		return ErrNotRunning
	}
	m.state = stateStopping
	rel := &stopReleases{m: m, ctx: ctx}
	m.stopRel = rel
	idle := m.endIdleLocked()
	m.mu.Unlock()
	var left *leaving
	if m.without(mutation.StopHeartbeatRewrite) {
		rel.add(idle...)
	} else {
		left = m.leave(ctx, rel, idle)
	}

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
		if m.without(mutation.StopAfterCancelAbandons) {
			break
		}
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
	if m.without(mutation.StopAfterCancelAbandons) && m.runCtx.Err() != nil {
		return errors.Join(ErrNotRunning, context.Cause(m.runCtx))
	}
	m.mu.Lock()
	m.state = stateDone
	m.cleaned = true
	m.mu.Unlock()
	m.unwatch() // nil while Start runs: stop-during-start-unguarded panics here
	return m.finishUnguarded(ctx, rel, left)
}

// finishUnguarded is finish, where stop-heartbeat-rewrite deletes the heartbeat beside the releases and
// announces the stop after them, while the background loops (the heartbeat's among them) still run;
// only then do they end.
func (m *Manager) finishUnguarded(ctx context.Context, rel *stopReleases, left *leaving) error {
	if !m.without(mutation.StopHeartbeatRewrite) {
		return m.finish(ctx, rel, left)
	}
	m.polls.Wait() // every poll has returned and queued its release
	if rel == nil {
		rel = &stopReleases{m: m, ctx: ctx}
	}
	m.mu.Lock()
	rest := append(m.stopRelease, m.staleLocked()...)
	m.stopRelease = nil
	m.mu.Unlock()
	rel.add(rest...)
	var delErr error
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		octx, cancel := m.stopStep(ctx)
		delErr = m.client.Del(octx, m.keys.node(m.id)).Err()
		cancel()
	}()
	n, err := rel.wait()
	<-deleted
	octx, cancel := m.stopStep(ctx)
	err = errors.Join(err, delErr, m.client.Publish(octx, m.keys.channel(), "stop "+m.id).Err())
	cancel()
	m.endLoops()
	return m.stopped(n, err)
}
