package chaos

import (
	"context"
	"strconv"
)

// Pause freezes the instance in Slot for the step's duration, as a long garbage-collection or VM pause
// would: the instance has decided to poll, then stops dead; its link carries nothing; when it wakes it
// carries on and sends the poll it had prepared, with the token it had. Only fencing at the resource can
// refuse that poll.
type Pause struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
}

// Name implements Fault.
func (Pause) Name() string { return "pause" }

// Apply implements Fault.
func (f Pause) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := target(env, f.Slot, f.Of)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	if err := env.Freeze(id); err != nil {
		return nil, a, err
	}
	return func(context.Context) error { return env.Thaw(id) }, a, nil
}
