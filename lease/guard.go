package lease

import (
	"strconv"
	"strings"
	"time"
)

// Acquiring at the end of the fresh-dataset guard. While the guard is in force the acquire script
// refuses every grant (-1). An acquire pass that was refused reads when the guard ends (the epoch key
// holds its end in Redis microseconds; TIME gives Redis's present, in the same round trip), remembers
// that moment on the manager's clock and arms the takeover alarm for it. Until then acquire passes send
// nothing, so a fleet that starts on a fresh dataset loads Redis with one refused batch per instance,
// not one per pass, and every instance acquires a round trip after the guard's end instead of at its
// next RenewInterval tick.
//
// The moment is counted from the reply, which comes after Redis read TIME, so a clock that keeps
// Redis's rate fires at or after the guard's end. A local clock faster than Redis's fires early: the
// attempt is refused and the end read again. A slower one fires late by at most DriftBound times the
// guard's remaining length. Nothing here can make a grant happen: the script decides, as always.

// scheduleGuardEnd reads when the fresh-dataset guard ends and arms the takeover alarm for then.
// Errors are counted on the link and otherwise ignored: the periodic acquire pass still retries.
func (m *Manager) scheduleGuardEnd() {
	octx, cancel := m.opCtx()
	defer cancel()
	p := m.client.Pipeline()
	epoch := p.Get(octx, m.keys.epoch())
	now := p.Time(octx)
	_, err := p.Exec(octx)
	replied := m.clock.Now()
	if err != nil {
		if m.runCtx.Err() == nil {
			m.noteErr("acquire", err)
		}
		return
	}
	left, ok := guardLeft(epoch.Val(), now.Val())
	if !ok {
		return // no epoch yet, or one written by something else: retry on the next pass
	}
	until := replied.Add(left)
	m.mu.Lock()
	m.guardUntil = until
	m.mu.Unlock()
	m.takeover.arm(until.Add(takeoverSlack))
}

// guardLeft returns how long the guard recorded in epoch ("<end in Redis microseconds> <run_id>") lasts
// after the Redis time now; zero when it has ended. ok is false when epoch cannot be read.
func guardLeft(epoch string, now time.Time) (time.Duration, bool) {
	f := strings.Fields(epoch)
	if len(f) == 0 {
		return 0, false
	}
	end, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, false
	}
	return max(time.Duration(end-now.UnixMicro())*time.Microsecond, 0), true
}
