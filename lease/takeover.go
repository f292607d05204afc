package lease

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Taking over at the lease's expiry.
//
// A crashed holder's last renewal was sent before the crash, so each of its leases expires in Redis at
// most LeaseTTL after it; its heartbeat, written at most HeartbeatInterval before the crash, expires at
// most HeartbeatTTL after it. Two clocks decide when a survivor can take an endpoint over: the
// heartbeat, whose expiry changes the assignment, and the lease key, whose expiry lets the acquire
// succeed. Waiting for the next periodic tick of each would add up to a DiscoveryInterval and a
// RenewInterval. Instead both expiries are read from Redis and acted on when they come:
//
//   - every discovery round reads the PTTL of the other instances' heartbeats (one pipelined round
//     trip) and schedules the next round at the first of those expiries (plus takeoverSlack), so the
//     assignment changes within milliseconds of a heartbeat's disappearance;
//   - every acquire pass reads the PTTL of the lease keys that refused it (held by another holding)
//     and schedules another pass at the first of those expiries (plus takeoverSlack). The new owner
//     then acquires within a round trip of the key's expiry and polls at once (a holding's poll loop
//     starts with a poll).
//
// A heartbeat that expires after the lease therefore delays the takeover until the heartbeat's
// expiry, and one that expires first until the lease's: the takeover comes at the later of the two,
// at most max(LeaseTTL, HeartbeatTTL) after the crash plus the round trips. With HeartbeatTTL ≤
// LeaseTTL (the defaults have them equal) that is within LeaseTTL of the crash. Only the instance the
// assignment prefers acquires, so balance holds as before and no extra contention is created; an
// attempt that comes early (the holder renewed in the meantime, or Redis's clock runs behind) is
// refused like any other and rescheduled from a fresh PTTL.
//
// Safety is untouched: the schedule only decides when an ordinary acquire is sent. The acquire script
// still refuses while the key exists (so never while another holding is valid in Redis), the guard
// still refuses for one TTL after a fresh dataset, fencing tokens still come from the script, and the
// new holder still believes only until its local deadline.

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
// returns the instances whose heartbeat still exists and the first time one of them expires (zero when
// none has a TTL).
func (m *Manager) heartbeatExpiries(ctx context.Context, others []string) ([]string, time.Time, error) {
	if len(others) == 0 {
		return nil, time.Time{}, nil
	}
	p := m.client.Pipeline()
	cmds := make([]*redis.DurationCmd, len(others))
	for i, id := range others {
		cmds[i] = p.PTTL(ctx, m.keys.node(id))
	}
	sent := m.clock.Now()
	if _, err := p.Exec(ctx); err != nil {
		return nil, time.Time{}, err
	}
	var alive []string
	var first time.Time
	for i, c := range cmds {
		d := c.Val()
		if d == -2 {
			continue // expired or deleted since the scan
		}
		alive = append(alive, others[i])
		if d < 0 {
			continue
		}
		if at := sent.Add(d); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return alive, first, nil
}
