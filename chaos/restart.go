package chaos

import (
	"context"
	"strconv"
)

// Restart crashes the instance in Slot and starts a replacement with a new instance ID, as a process
// restart does. The new instance cannot renew the old one's leases: it must acquire them legitimately.
type Restart struct {
	Slot int `json:"slot"`
}

// Name implements Fault.
func (Restart) Name() string { return "restart" }

// Apply implements Fault.
func (f Restart) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := slotID(env, f.Slot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Removes: true, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	if err := env.Crash(id); err != nil {
		return nil, a, err
	}
	nid, err := env.StartInstance(ctx)
	a.Params["replacement"] = nid
	return nil, a, err
}
