package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
)

// wirePause is a pause armed on an instance's conversation with Redis (chaos.WirePause). The instance's
// hook (a system in this process) or its wire recorder (a process system) shows it every command
// before it is sent and every reply before it is handed on; at its point it freezes the instance, once.
type wirePause struct {
	commands []string // upper case: any of them
	after    bool
	taken    atomic.Bool
	take     func() // freezes the instance and schedules its waking; called at most once
	// over is closed when a pause that took hold has ended.
	over chan struct{}
}

// at is told of a command (reply false, before it is sent) or of the reply to it (reply true, before it
// is handed on), and freezes the instance when this is the armed point. It reports whether it did: the
// caller then waits on the instance's calls before it passes anything on.
func (p *wirePause) at(name string, reply bool) bool {
	if p == nil || reply != p.after || !slices.Contains(p.commands, strings.ToUpper(name)) || !p.taken.CompareAndSwap(false, true) {
		return false
	}
	p.take()
	return true
}

// atWire shows the instance's armed pause, if any, a command or a reply (see wirePause.at).
func (in *vinstance) atWire(name string, reply bool) bool {
	return in.wire.Load().at(name, reply)
}

// PauseAtWire implements chaos.WirePauser: the pause is armed until the returned end is called (or
// within has passed, when positive); once it has taken hold, it lasts d, and end waits for its end, so
// that the fault's window covers it.
func (r *runner) PauseAtWire(id, command string, after bool, d, within time.Duration) (func(context.Context) error, error) {
	in, err := r.find(id)
	if err != nil {
		return nil, err
	}
	p := &wirePause{commands: chaos.WireCommands(command), after: after, over: make(chan struct{})}
	where := chaos.WirePause{Command: command, After: after}.Where()
	var once sync.Once
	end := func() { once.Do(func() { close(p.over) }) }
	p.take = func() {
		in.wire.CompareAndSwap(p, nil)
		in.fmu.Lock()
		already := in.freezing != nil || in.pclock.Paused()
		if !already {
			// The note comes first: the paused event and whatever the instance does on waking follow it.
			r.rec.Add(history.Event{Kind: history.KindNote, At: r.rec.Now(), Instance: id,
				Note: fmt.Sprintf("wire pause: %s froze %s, for %v", where, id, d)})
			r.freezeNow(in)
		}
		in.fmu.Unlock()
		if already {
			end() // another pause holds it: that one wakes it
			return
		}
		time.AfterFunc(d, func() {
			_ = r.Thaw(id)
			end()
		})
	}
	in.wire.Store(p)
	if within > 0 {
		time.AfterFunc(within, func() { in.wire.CompareAndSwap(p, nil) })
	}
	return func(ctx context.Context) error {
		in.wire.CompareAndSwap(p, nil)
		if !p.taken.Load() {
			return nil
		}
		select {
		case <-p.over:
		case <-ctx.Done():
		}
		return nil
	}, nil
}
