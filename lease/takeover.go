package lease

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Taking over at the lease's expiry (see "Taking over" in the package doc): discovery schedules its
// next round at the first other heartbeat's expiry, and an acquire pass that was refused schedules the
// next pass at the first refusing lease's expiry, both read as PTTLs from Redis. The schedules only
// decide when ordinary, atomic acquires are sent; they add no way to hold a lease.

// scheduleTakeover reads the PTTL of the lease keys of eps (which refused this instance's acquire) and
// arms the takeover alarm for the first expiry. A key that is already gone arms it at once. Errors are
// counted on the link and otherwise ignored: the periodic acquire pass still retries.
func (m *Manager) scheduleTakeover(eps []string) {
	if len(eps) == 0 {
		return
	}
	octx, cancel := m.opCtx()
	defer cancel()
	p := m.client.Pipeline()
	cmds := make([]*redis.DurationCmd, len(eps))
	for i, ep := range eps {
		cmds[i] = p.PTTL(octx, m.keys.lease(ep))
	}
	sent := m.clock.Now()
	_, err := p.Exec(octx)
	if err != nil && m.runCtx.Err() == nil {
		m.noteErr("acquire", err)
		return
	}
	if first, ok := firstExpiry(sent, cmds); ok {
		m.takeover.arm(first.Add(takeoverSlack))
	}
	// Until its own expiry, each of these endpoints is left out of acquire passes: without that, every
	// pass that the first expiry (or a release of any endpoint) starts would send an acquire and a PTTL
	// for every endpoint still held by others, which during a rolling start is most of a fleet's
	// traffic. A renewal since the read makes the retry come early: it is refused and read again. A
	// release announced since the read was sent may postdate the PTTL: that endpoint is left in. So is
	// every endpoint when the read was sent before the current subscription was confirmed: a release
	// between the two was announced to nobody here (subscription.go).
	m.mu.Lock()
	for i, c := range cmds {
		if sent.Before(m.subAt) {
			break
		}
		if at, ok := m.notified[eps[i]]; ok && !at.Before(sent) {
			continue
		}
		if d, err := c.Result(); err == nil && d >= 0 {
			m.refusedUntil[eps[i]] = sent.Add(d + takeoverSlack)
		}
	}
	m.mu.Unlock()
}

// firstExpiry returns the earliest time, counted from sent, at which one of the keys read by cmds
// expires: sent itself for a key that is gone (-2), nothing for a key without a TTL (-1).
func firstExpiry(sent time.Time, cmds []*redis.DurationCmd) (time.Time, bool) {
	var first time.Time
	ok := false
	for _, c := range cmds {
		d, err := c.Result()
		if err != nil {
			continue
		}
		var at time.Time
		switch {
		case d == -2: // gone
			at = sent
		case d < 0: // no TTL: not ours to wait for
			continue
		default:
			at = sent.Add(d)
		}
		if !ok || at.Before(first) {
			first, ok = at, true
		}
	}
	return first, ok
}

// heartbeatExpiries reads the PTTL of the heartbeats of others (instance IDs) in one round trip. It
// returns the instances whose heartbeat still exists and, for each, when it expires (zero when it has
// no TTL).
func (m *Manager) heartbeatExpiries(ctx context.Context, others []string) ([]string, []time.Time, error) {
	if len(others) == 0 {
		return nil, nil, nil
	}
	p := m.client.Pipeline()
	cmds := make([]*redis.DurationCmd, len(others))
	for i, id := range others {
		cmds[i] = p.PTTL(ctx, m.keys.node(id))
	}
	sent := m.clock.Now()
	if _, err := p.Exec(ctx); err != nil {
		return nil, nil, err
	}
	var alive []string
	var expires []time.Time
	for i, c := range cmds {
		d := c.Val()
		if d == -2 {
			continue // expired or deleted since the scan
		}
		alive = append(alive, others[i])
		var at time.Time
		if d >= 0 {
			at = sent.Add(d)
		}
		expires = append(expires, at)
	}
	return alive, expires, nil
}
