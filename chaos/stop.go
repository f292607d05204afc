package chaos

import (
	"context"
	"fmt"
	"strconv"
)

// Stop shuts the instance in Slot down gracefully: it finishes in-flight polls, releases its leases and
// tells the others, so they can take over at once (scale down).
//
// With Signal set it stops the instance the way a service stops on SIGTERM: the context the instance
// was started with is cancelled first (as signal.NotifyContext does), then Stop is called. Its link
// stays up throughout, so a system that still releases on the way out hands over at once; one that
// leaves its leases to expire hands over a lease TTL later. What Stop returns is recorded with the
// fault ("stop_error"), with or without Signal: an instance whose Stop could not release (its backend
// down, say) has stopped all the same, and the handoff is what the checker judges.
type Stop struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
	// Signal cancels the instance's start context before calling Stop.
	Signal bool `json:"signal,omitempty"`
}

// Signaller is the part of an Env that can cancel an instance's start context without cutting its
// link, then stop it gracefully. An Env without it cannot carry out a Stop with Signal set.
type Signaller interface {
	// SignalStop cancels the context id was started with, then calls its Stop. It returns Stop's own
	// error apart (stopErr) from a failure to carry the fault out (err).
	SignalStop(ctx context.Context, id string) (stopErr, err error)
}

// StopAnswer is what an Env's Stop returns when the instance stopped but its own Stop returned an error:
// the system's answer, recorded with the fault ("stop_error"), not a failure to carry the fault out.
type StopAnswer struct{ Err error }

func (e *StopAnswer) Error() string { return e.Err.Error() }
func (e *StopAnswer) Unwrap() error { return e.Err }

// Name implements Fault.
func (Stop) Name() string { return "stop" }

// Apply implements Fault.
func (f Stop) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := target(env, f.Slot, f.Of)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Removes: true, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	if !f.Signal {
		err := env.Stop(ctx, id)
		if sa, ok := err.(*StopAnswer); ok {
			a.Params["stop_error"] = sa.Err.Error()
			err = nil
		}
		return nil, a, err
	}
	a.Params["signal"] = "start context cancelled, then Stop"
	sig, ok := env.(Signaller)
	if !ok {
		return nil, a, fmt.Errorf("%w: this environment cannot cancel an instance's start context apart from a crash", ErrUnsupported)
	}
	stopErr, err := sig.SignalStop(ctx, id)
	if stopErr != nil {
		a.Params["stop_error"] = stopErr.Error()
	}
	return nil, a, err
}
