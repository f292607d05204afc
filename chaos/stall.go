package chaos

import (
	"context"
	"fmt"
	"strconv"
)

// Stall makes every Redis call of the instance in Slot (or of the holder of Of) block for the step's
// duration: neither answered nor failed. Its clock, timers and polls go on. A call already sent when
// the stall begins has its reply held until the stall ends.
//
// This is a stuck socket, or a stop-the-world pause, as the instance's own code sees it: the goroutine
// that made the call is stuck inside it, and no timeout of the client frees it (the call's context
// is not watched while it is held; when the stall ends, a call whose context expired meanwhile fails
// at once with the context's error, and one whose reply was held returns that reply). So a renewal does
// not fail fast: a lease system that relies on a failed renewal to end its belief keeps believing, and
// only its local deadline, checked by a goroutine that is not stuck in the call, ends the belief in
// time. Longer than the TTL in the scenarios, a stall leaves no other way out.
type Stall struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
	// OrSlot, with Of, targets the instance in Slot when nobody holds Of at that moment, instead of
	// failing the step (the composing nemesis aims at holders it cannot foresee).
	OrSlot bool `json:"or_slot,omitempty"`
}

// Staller is the part of an Env that can stall an instance's backend calls. An Env without it cannot
// carry out a Stall.
type Staller interface {
	Stall(id string) error
	Unstall(id string) error
}

// Name implements Fault.
func (Stall) Name() string { return "stall" }

// Apply implements Fault.
func (f Stall) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	st, ok := env.(Staller)
	if !ok {
		return nil, Applied{}, fmt.Errorf("%w: this environment cannot stall an instance's calls", ErrUnsupported)
	}
	id, err := targetOr(env, f.Slot, f.Of, f.OrSlot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	if f.Of != "" {
		a.Params = map[string]string{"of": f.Of}
	}
	if err := st.Stall(id); err != nil {
		return nil, a, err
	}
	return func(context.Context) error { return st.Unstall(id) }, a, nil
}
