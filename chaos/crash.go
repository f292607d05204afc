package chaos

import (
	"context"
	"strconv"
)

// Crash kills the instance in Slot: no release, no goodbye, its connections dropped. Its leases must
// expire before anyone else may take them.
type Crash struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
	// OrSlot, with Of, targets the instance in Slot when nobody holds Of at that moment, instead of
	// failing the step (the composing nemesis aims at holders it cannot foresee).
	OrSlot bool `json:"or_slot,omitempty"`
}

// Name implements Fault.
func (Crash) Name() string { return "crash" }

// Apply implements Fault.
func (f Crash) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := targetOr(env, f.Slot, f.Of, f.OrSlot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Removes: true, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	return nil, a, env.Crash(id)
}
