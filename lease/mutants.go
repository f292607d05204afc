//go:build tenure_mutants

package lease

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/mutation"
)

// The manager's mutants: the points of mechanisms.go, each consulting the set of mechanisms switched
// off (docs/mutants.md). This file exists only in a build with the tenure_mutants tag.

// variant is the set of mechanisms switched off, and what the mutants keep track of.
type variant struct {
	off mutation.Set
	// released holds the holdings whose release release-before-poll sent at the handoff, before
	// their poll ended (*holding -> struct{}).
	released *sync.Map
}

// WithMutants returns cfg with the named mechanisms switched off. Each must be one of the lease's
// mutants in mutation.Mutants.
func WithMutants(cfg Config, names ...mutation.Name) Config {
	for _, n := range names {
		if mu, ok := mutation.Lookup(n); !ok || mu.Of != mutation.Lease {
			panic(fmt.Sprintf("lease: %q is not a mutant of the lease manager (see mutation.Mutants)", n))
		}
	}
	cfg.variant = variant{off: mutation.Of(names...), released: &sync.Map{}}
	return cfg
}

func (m *Manager) without(n mutation.Name) bool { return m.cfg.variant.off.Has(n) }

//go:embed scripts/mutants/*.lua
var mutantFS embed.FS

func mutantScript(name string) *redis.Script {
	b, err := mutantFS.ReadFile("scripts/mutants/" + name + ".lua")
	if err != nil {
		panic("lease: missing embedded script " + name)
	}
	return redis.NewScript(string(b))
}

// The acquire variants, each without one mechanism. They keep acquire's conventions, so ScriptNames
// lists them as "acquire" and tools that classify commands read them as the reference's.
var (
	acquireNoGuard       = mutantScript("acquire_no_guard")
	acquireTokenReset    = mutantScript("acquire_token_reset")
	acquireNotIdempotent = mutantScript("acquire_not_idempotent")
	acquireGuardAnyRun   = mutantScript("acquire_guard_any_run")
	acquireGuardHalfTTL  = mutantScript("acquire_guard_half_ttl")
)

func init() {
	for _, s := range []*redis.Script{acquireNoGuard, acquireTokenReset, acquireNotIdempotent, acquireGuardAnyRun, acquireGuardHalfTTL} {
		scriptNames[s.Hash()] = "acquire"
	}
}

func (m *Manager) holdingValue(nonce string) string {
	if m.without(mutation.ProcessIdentity) {
		return m.id
	}
	return m.id + ":" + nonce
}

func (m *Manager) acquireWith() *redis.Script {
	switch {
	case m.without(mutation.NoGuard):
		return acquireNoGuard
	case m.without(mutation.TokenReset):
		return acquireTokenReset
	case m.without(mutation.AcquireNotIdempotent):
		return acquireNotIdempotent
	case m.without(mutation.GuardAnyRun):
		return acquireGuardAnyRun
	case m.without(mutation.GuardHalfTTL):
		return acquireGuardHalfTTL
	}
	return acquireScript
}

func (m *Manager) driftBound() float64 {
	if m.without(mutation.DriftIgnored) {
		return 0
	}
	return m.cfg.DriftBound
}

func (m *Manager) countsFrom(sc *scriptCall) time.Time {
	if m.without(mutation.DeadlineFromReply) {
		return sc.replied
	}
	return sc.sent
}

func (m *Manager) keepsDeadline() bool { return !m.without(mutation.NoDeadline) }
func (m *Manager) failsClosed() bool   { return !m.without(mutation.NotFailClosed) }

// lostEndsBelief: lost-renewal-kept carries on after a renewal answered "not held", as if it were a
// passing failure, until its local deadline ends the belief.
func (m *Manager) lostEndsBelief() bool { return !m.without(mutation.LostRenewalKept) }
func (m *Manager) watchesLink() bool    { return !m.without(mutation.NoLinkHealth) }

// watchesDeadline: no-watchdog ends a belief only at the poll loop's check before its next poll, so a
// poll in flight at the deadline runs to its end.
func (m *Manager) watchesDeadline() bool { return !m.without(mutation.NoWatchdog) }

// probeAnswered: probe-unanswered-heals takes a probe that got no reply for one that did: the link is
// healthy again at the next probe, whether or not Redis answered it.
func (m *Manager) probeAnswered(err error) bool {
	return err == nil || (m.without(mutation.ProbeUnansweredHeals) && linkFailure(err))
}

func (m *Manager) timeoutConfirms(err error) bool {
	return m.without(mutation.TimeoutAsSuccess) && (errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err))
}

// heartbeatLive: stop-heartbeat-rewrite's heartbeat loop writes in every state, until Stop ends it.
func (m *Manager) heartbeatLive() bool {
	return m.state == stateRunning || m.without(mutation.StopHeartbeatRewrite)
}

func (m *Manager) assignedHere(insts, targets []string) map[string]bool {
	if !m.without(mutation.PlainRendezvous) {
		return m.share.assigned(insts, m.id)
	}
	assigned := make(map[string]bool)
	for ep, owner := range assignPlain(insts, targets) {
		if owner == m.id {
			assigned[ep] = true
		}
	}
	return assigned
}

// assignPlain is rendezvous hashing without the load cap: every endpoint goes to the instance with
// the highest weight.
func assignPlain(instances, endpoints []string) map[string]string {
	insts := dedupe(instances)
	out := make(map[string]string, len(endpoints))
	if len(insts) == 0 {
		return out
	}
	for _, e := range dedupe(endpoints) {
		eh := hash64(e)
		best, bestScore := "", uint64(0)
		for _, id := range insts {
			if s := mix64(eh ^ mix64(hash64(id))); best == "" || s > bestScore {
				best, bestScore = id, s
			}
		}
		out[e] = best
	}
	return out
}

// handoffOverride: release-before-poll releases a handed-off holding at once, its poll in flight or
// not. m.mu is held.
func (m *Manager) handoffOverride(s *slot, h *holding) {
	if !m.without(mutation.ReleaseBeforePoll) {
		return
	}
	m.cfg.variant.released.Store(h, struct{}{})
	s.state = epReleasing
	m.polls.Add(1)
	go func() { defer m.polls.Done(); m.release(h) }()
}

func (m *Manager) releaseSent(h *holding) bool {
	if !m.without(mutation.ReleaseBeforePoll) {
		return false
	}
	_, ok := m.cfg.variant.released.Load(h)
	return ok
}

// renewOverride: renew-unconditional renews with a plain PEXPIRE, whoever holds the key.
func (m *Manager) renewOverride(endpoint string) *scriptCall {
	if !m.without(mutation.RenewUnconditional) {
		return nil
	}
	key, ttl := m.keys.lease(endpoint), m.cfg.LeaseTTL
	return &scriptCall{plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
		c := p.PExpire(ctx, key, ttl)
		return func() (int64, error) { ok, err := c.Result(); return b2i(ok), err }
	}}
}

// releaseOverride: release-unchecked releases with a plain DEL, whoever holds the key.
func (m *Manager) releaseOverride(endpoint, channel, msg string) *scriptCall {
	if !m.without(mutation.ReleaseUnchecked) {
		return nil
	}
	key := m.keys.lease(endpoint)
	return &scriptCall{plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
		c := p.Del(ctx, key)
		if channel != "" {
			p.Publish(ctx, channel, msg)
		}
		return c.Result
	}}
}

// renewPassOverride: renew-get-then-expire renews every lease in two round trips (renewGetThenExpire).
func (m *Manager) renewPassOverride(hs []*holding) bool {
	if !m.without(mutation.RenewGetThenExpire) {
		return false
	}
	calls := m.renewGetThenExpire(hs)
	m.noteBatch("renew", calls)
	m.settleRenewals(hs, calls)
	return true
}

// renewGetThenExpire GETs every lease, compares in the client, then PEXPIREs those that matched, in two
// round trips (not atomic). The deadline still counts from the first send.
func (m *Manager) renewGetThenExpire(hs []*holding) []*scriptCall {
	gets := make([]*scriptCall, len(hs))
	for i, h := range hs {
		key, value := m.keys.lease(h.endpoint), h.value
		gets[i] = &scriptCall{plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
			c := p.Get(ctx, key)
			return func() (int64, error) { v, err := c.Result(); return b2i(err == nil && v == value), err }
		}}
	}
	octx, cancel := m.opCtx()
	defer cancel()
	runBatch(octx, m.client, m.clock.Now, gets)
	var exps []*scriptCall
	for i, g := range gets {
		if g.err == nil && g.res == 1 {
			key, ttl := m.keys.lease(hs[i].endpoint), m.cfg.LeaseTTL
			exps = append(exps, &scriptCall{plain: func(ctx context.Context, p redis.Pipeliner) func() (int64, error) {
				c := p.PExpire(ctx, key, ttl)
				return func() (int64, error) { ok, err := c.Result(); return b2i(ok), err }
			}})
		}
	}
	runBatch(octx, m.client, m.clock.Now, exps)
	j := 0
	for _, g := range gets {
		if g.err == nil && g.res == 1 {
			e := exps[j]
			j++
			g.res, g.err, g.replied = e.res, e.err, e.replied
		}
	}
	return gets
}
