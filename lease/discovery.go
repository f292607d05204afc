package lease

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Coalescing of fleet notifications. Every instance that starts announces itself ("join"), and every
// instance that stops says so ("stop"); each announcement asks every other instance for a discovery
// round. A fleet of N starting together would otherwise run N rounds on each of N instances. The first
// announcement after a quiet spell runs a round at once; the ones that follow within the window are
// served by one more round at the end of that window. While announcements keep coming, each window is
// twice the last, up to a quarter of DiscoveryInterval: a rolling start of 100 instances over 3 s (at
// time scale 0.1) then costs each instance about 15 rounds instead of 60, and every round reads the
// fleet's heartbeats and recomputes the assignment. A stop is never delayed: a graceful stop's handoff
// waits for the round, and stops do not come in bursts. A round asked for while one runs is run once
// more after it (discoverKick holds one kick). Rounds timed by the takeover schedule (fleetWake), the
// periodic tick and link recovery are never delayed either. A release of an endpoint assigned to
// another here asks for a round the way a join does (its releaser may have a newer view: see notice).

// joinWindowDivisor sets the first window: DiscoveryInterval/20 (500 ms with the defaults);
// joinWindowMaxDivisor the longest: DiscoveryInterval/4 (2.5 s).
const (
	joinWindowDivisor    = 20
	joinWindowMaxDivisor = 4
)

// discoveryState is what discovery rounds remember between them: the coalescing of announcements, and
// the fleet as last read (see fleet).
type discoveryState struct {
	mu      sync.Mutex
	last    time.Time     // when an announcement last kicked a round (manager clock)
	pending bool          // a round is scheduled for the end of the window
	window  time.Duration // the current window (zero: the first)

	hinted    []string  // instances announced since the last round: their heartbeats are read
	scanned   bool      // the heartbeat keys were scanned at least once
	lastScan  time.Time // when they were last scanned
	scanUntil time.Time // scan at every round until then (an instance vanished)
	known     []string  // the other instances found alive at the last round, sorted
	// expiry holds, for each instance of known, when its heartbeat expires as last read (zero: no
	// TTL); a round of the takeover schedule reads only those due by then.
	expiry map[string]time.Time
}

// announced asks for a discovery round on behalf of a fleet announcement by instance id (stop: it
// announced its stop), coalesced as described above. The round reads id's heartbeat, so a newcomer is
// found without a scan.
func (m *Manager) announced(id string, stop bool) {
	j := &m.disc
	first := m.cfg.DiscoveryInterval / joinWindowDivisor
	j.mu.Lock()
	if id != m.id && !slices.Contains(j.hinted, id) {
		j.hinted = append(j.hinted, id)
	}
	if j.window == 0 {
		j.window = first
	}
	now := m.clock.Now()
	if stop {
		j.last = now
		j.mu.Unlock()
		m.kick(m.discoverKick)
		return
	}
	if j.pending {
		j.mu.Unlock()
		return // the scheduled round will see this announcement too
	}
	if wait := j.last.Add(j.window).Sub(now); !j.last.IsZero() && wait > 0 {
		j.pending = true
		j.mu.Unlock()
		done := m.runCtx.Done()
		go func() {
			t := m.clock.NewTimer(wait)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C():
				j.mu.Lock()
				j.pending = false
				j.last = m.clock.Now()
				j.window = min(2*j.window, m.cfg.DiscoveryInterval/joinWindowMaxDivisor)
				j.mu.Unlock()
				m.kick(m.discoverKick)
			}
		}()
		return
	}
	j.last, j.window = now, first // after a quiet spell
	j.mu.Unlock()
	m.kick(m.discoverKick)
}

// assignment keeps the last assignment's inputs, so that a round that finds the same fleet and the same
// targets does not compute it again.
type assignment struct {
	insts, targets []string
}

// same reports whether insts and targets (both sorted) are what the last assignment was computed from.
func (a *assignment) same(insts, targets []string) bool {
	return a.insts != nil && slices.Equal(a.insts, insts) && sameList(a.targets, targets)
}

// sameList is slices.Equal, at once for two views of one array (a SessionSource's shared list).
func sameList(a, b []string) bool {
	if len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) {
		return true
	}
	return slices.Equal(a, b)
}

// Finding the fleet. Heartbeat keys are found by SCAN, which walks the whole keyspace — leases, fencing
// counters and sessions too, tens of thousands of keys for every few heartbeats — so a round does not
// scan when it has no reason to. It reads the PTTL of the heartbeats it knows and of the instances
// announced since (an announcement names its instance), which also tells it who has gone, and scans
// only: at its first round; while the link recovers; when a known instance's heartbeat has vanished, or
// a scan finds a registered instance's heartbeat gone before the expiry its entry was written with, and
// then at every round for one HeartbeatTTL (after a Redis restart the survivors' heartbeats come back one
// by one, and an instance that started meanwhile knew none of them); while a fresh-dataset guard it
// was refused by may still hold grants (scanRegistryUntil: the registry was lost with the dataset, and
// the survivors write it again over a HeartbeatInterval, most without an announcement); and at least every
// nodeRescanRounds rounds' worth of DiscoveryInterval, which bounds how long an instance whose
// announcement was lost stays unknown (balance suffers meanwhile, never safety: the assignment only
// chooses who tries to acquire).
const nodeRescanRounds = 6

// fleet returns the other live instances (sorted) and the first expiry among their heartbeats. A
// round of the takeover schedule (due) reads only the heartbeats whose expiry, as last read, has come
// (see dueRound); any other round reads every known and announced instance's.
func (m *Manager) fleet(ctx context.Context, due bool) ([]string, time.Time, error) {
	d := &m.disc
	now := m.clock.Now()
	m.mu.Lock()
	recovering := m.unhealthy
	m.mu.Unlock()
	d.mu.Lock()
	scan := !d.scanned || recovering || now.Before(d.scanUntil) ||
		now.Sub(d.lastScan) >= nodeRescanRounds*m.cfg.DiscoveryInterval
	hinted := d.hinted
	d.hinted = nil
	known := d.known
	others := dedupe(append(slices.Clone(known), hinted...))
	var expiry map[string]time.Time
	if due && !scan && len(hinted) == 0 && d.expiry != nil {
		expiry = maps.Clone(d.expiry)
	}
	d.mu.Unlock()

	if expiry != nil {
		return m.dueRound(ctx, now, known, expiry)
	}
	var owed []string
	if scan {
		scanned, registeredOwed, err := m.scanNodes(ctx, now)
		if err != nil {
			m.rehint(hinted)
			return nil, time.Time{}, err
		}
		others, owed = dedupe(append(scanned, hinted...)), registeredOwed
	}
	alive, at, err := m.heartbeatExpiries(ctx, others)
	if err != nil {
		m.rehint(hinted)
		return nil, time.Time{}, err
	}
	// A registered instance whose heartbeat is gone before the expiry it was written with has vanished
	// too, whether or not this instance knew it (its first round after a Redis restart knew nobody).
	if gone := vanished(known, alive, hinted) || vanished(owed, alive, hinted); gone && !scan {
		// Someone has gone unannounced: perhaps more has changed (a Redis restart empties every
		// heartbeat). Read the registry, and the heartbeats of those in it not read just now.
		extraAlive, extraAt, err := m.vanishedRound(ctx, now, others)
		if err != nil {
			return nil, time.Time{}, err // known is left as it was: the next round reads it again
		}
		alive, at = append(alive, extraAlive...), append(at, extraAt...)
		scan = true
	} else if gone {
		// The same when this round scanned anyway (the link recovering from the very restart that
		// emptied the heartbeats): the survivors write theirs again one by one over a HeartbeatTTL,
		// and one that had not yet when this scan read the registry must be found by the next rounds,
		// not by the periodic scan nodeRescanRounds later, or the endpoints this instance now leaves
		// to it stay unpolled meanwhile.
		d.mu.Lock()
		d.scanUntil = now.Add(m.cfg.HeartbeatTTL)
		d.mu.Unlock()
	}
	expiry = make(map[string]time.Time, len(alive))
	for i, id := range alive {
		expiry[id] = at[i]
	}
	alive = dedupe(alive)
	d.mu.Lock()
	d.known, d.expiry = alive, expiry
	if scan {
		d.scanned, d.lastScan = true, now
	}
	d.mu.Unlock()
	return alive, firstOf(expiry), nil
}

// vanishedRound handles an instance gone without a word: it rescans the registry at every round for
// one HeartbeatTTL, starting now, and reads the heartbeats of the registry's instances not in read.
func (m *Manager) vanishedRound(ctx context.Context, now time.Time, read []string) ([]string, []time.Time, error) {
	d := &m.disc
	d.mu.Lock()
	d.scanUntil = now.Add(m.cfg.HeartbeatTTL)
	d.mu.Unlock()
	registry, _, err := m.scanNodes(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	var extra []string
	for _, id := range registry {
		if !slices.Contains(read, id) {
			extra = append(extra, id)
		}
	}
	return m.heartbeatExpiries(ctx, extra)
}

// dueRound is a round of the takeover schedule: it reads the heartbeats of the instances of known
// whose expiry (in expiry, a copy of what the last rounds read) has come, and keeps the others as they
// were read: they are alive at least until their expiry, which is later. When every instance of a
// fleet wakes at a dead instance's expiry, each reads one heartbeat instead of the whole fleet's.
func (m *Manager) dueRound(ctx context.Context, now time.Time, known []string, expiry map[string]time.Time) ([]string, time.Time, error) {
	var dueIDs []string
	for _, id := range known {
		if at := expiry[id]; !at.IsZero() && !at.After(now) {
			dueIDs = append(dueIDs, id)
		}
	}
	if len(dueIDs) == 0 {
		return known, firstOf(expiry), nil // woken early: nothing has expired yet
	}
	alive, at, err := m.heartbeatExpiries(ctx, dueIDs)
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, id := range dueIDs {
		delete(expiry, id)
	}
	for i, id := range alive {
		expiry[id] = at[i]
	}
	out := make([]string, 0, len(expiry))
	for id := range expiry {
		out = append(out, id)
	}
	slices.Sort(out)
	d := &m.disc
	d.mu.Lock()
	d.known, d.expiry = out, expiry
	if len(alive) < len(dueIDs) {
		// Gone without a word. The registry is read from the next round on (for one HeartbeatTTL, as
		// after any vanished instance), not in this one: this round's result is what the takeover
		// waits for.
		d.scanUntil = now.Add(m.cfg.HeartbeatTTL)
	}
	d.mu.Unlock()
	return out, firstOf(expiry), nil
}

// firstOf returns the earliest non-zero time in expiry (zero when there is none).
func firstOf(expiry map[string]time.Time) time.Time {
	var first time.Time
	for _, at := range expiry {
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// vanished reports whether an instance of known (sorted) is not in alive (sorted) and did not announce
// itself (hinted: a stop says why its heartbeat is gone).
func vanished(known, alive, hinted []string) bool {
	for _, k := range known {
		if _, ok := slices.BinarySearch(alive, k); !ok && !slices.Contains(hinted, k) {
			return true
		}
	}
	return false
}

// rehint keeps announcements for the next round when this one failed.
func (m *Manager) rehint(ids []string) {
	if len(ids) == 0 {
		return
	}
	m.disc.mu.Lock()
	m.disc.hinted = append(m.disc.hinted, ids...)
	m.disc.mu.Unlock()
}

// scanNodes returns the other instances named in the fleet registry (scale_fleet.go), sorted: the
// candidates whose heartbeat keys the caller then reads. The registry replaces a SCAN of the keyspace,
// which walks every lease and fence key too. owed lists those whose entry says their heartbeat should
// still be there at now (the expiry their last heartbeat was given has not passed).
func (m *Manager) scanNodes(ctx context.Context, now time.Time) (others, owed []string, err error) {
	ids, expiries, err := m.registered(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i, id := range ids {
		if id == m.id {
			continue
		}
		others = append(others, id)
		if expiries[i].After(now) {
			owed = append(owed, id)
		}
	}
	return dedupe(others), owed, nil
}

// prepareLead is how long before the first known heartbeat's expiry the assignment without that
// instance is computed (prepareTakeover): far more than the computation takes (under a millisecond
// for 100 instances and 10,000 endpoints, a few on a loaded machine), far less than a heartbeat
// interval.
const prepareLead = 100 * time.Millisecond

// prepareTakeover computes, shortly before the takeover schedule's next round, the assignment that
// round will need if the instances due by then are gone, so that the round finds it ready (ownShare's
// prepared result). Every instance of a fleet runs that round at the same moment when a dead
// instance's heartbeat expires; computing the assignment there put the whole fleet's CPU time on the
// takeover's path. The heartbeats are due only when an instance missed its heartbeats for most of a
// HeartbeatTTL (every ordinary round reads them again), so the work is rarely wasted.
func (m *Manager) prepareTakeover() {
	d := &m.disc
	d.mu.Lock()
	first := firstOf(d.expiry)
	var stay []string
	for _, id := range d.known {
		if at := d.expiry[id]; at.IsZero() || at.After(first.Add(takeoverSlack)) {
			stay = append(stay, id)
		}
	}
	d.mu.Unlock()
	if first.IsZero() {
		return
	}
	insts := dedupe(append(stay, m.id))
	m.mu.Lock()
	targets := m.lastAssign.targets
	m.mu.Unlock()
	if targets == nil {
		return
	}
	m.shareMu.Lock()
	m.share.update(targets)
	m.share.prepare(insts, m.id)
	m.shareMu.Unlock()
}
