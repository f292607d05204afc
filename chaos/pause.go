package chaos

import (
	"context"
	"strconv"
)

// Pause freezes the instance in Slot for the step's duration, as SIGSTOP, a long garbage-collection
// pause or a VM losing its host would. The pause takes hold at the worst moment: the instance's next
// poll, after it decided to poll and checked its lease, before the poll reaches the endpoint (or after
// two poll intervals, for an instance that does not poll). From then on it makes no progress:
//
//   - its clock stops (clock.Pausable): a goroutine that reads the time blocks there, and no timer of
//     the clock fires; a timer that fell due during the pause fires on waking, and the clock has then
//     jumped forward by the pause, as a stopped process sees;
//   - each of its Redis calls (and connection dials) blocks before it is sent, and a call already sent
//     has its reply held until the instance wakes;
//   - each poll it has decided to make blocks before it reaches the endpoint.
//
// On waking it carries on from where it stood: the poll it had prepared goes out with the token it had,
// and its belief is whatever it was. Only fencing at the resource can refuse that poll: no lease design
// can stop a process frozen between its validity check and its action, which is why a pause lies
// outside every lease system's assumptions (the run's history says so).
//
// The fault's window starts at the step; the pause itself starts at the instance's "paused" lifecycle
// event and ends at "resumed".
//
// What still differs from SIGSTOP: a goroutine of the instance that neither reads its clock nor calls
// Redis nor polls keeps running (pure computation, channel hand-offs, logging); Go runtime timers keep
// running — a context's deadline, go-redis's socket deadlines — so a call that was already reading its
// reply when the pause took hold may time out and drop its connection during the pause, where a stopped
// process would find the reply in its socket buffer (a call whose context simply expired fails on
// waking, as it would after SIGSTOP), and go-redis's own re-send of a call already under way (after a
// network error) is not held; the operating system keeps accepting bytes for the instance's sockets, as
// it does for a stopped process. A system whose backend is PostgreSQL has no Redis hook:
// its link is partitioned for the pause, so its calls fail or time out instead of waiting.
type Pause struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
	// OrSlot, with Of, targets the instance in Slot when nobody holds Of at that moment, instead of
	// failing the step (the composing nemesis aims at holders it cannot foresee).
	OrSlot bool `json:"or_slot,omitempty"`
}

// Name implements Fault.
func (Pause) Name() string { return "pause" }

// Apply implements Fault.
func (f Pause) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := targetOr(env, f.Slot, f.Of, f.OrSlot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	if f.Of != "" {
		a.Params = map[string]string{"of": f.Of}
	}
	if err := env.Freeze(id); err != nil {
		return nil, a, err
	}
	return func(context.Context) error { return env.Thaw(id) }, a, nil
}
