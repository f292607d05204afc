package chaos

import (
	"context"
	"strconv"
)

// Stop shuts the instance in Slot down gracefully: it finishes in-flight polls, releases its leases and
// tells the others, so they can take over at once (scale down).
type Stop struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
}

// Name implements Fault.
func (Stop) Name() string { return "stop" }

// Apply implements Fault.
func (f Stop) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := target(env, f.Slot, f.Of)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Removes: true, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	return nil, a, env.Stop(ctx, id)
}
