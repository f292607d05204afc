package chaos

import (
	"context"
	"strconv"
)

// Crash kills the instance in Slot: no release, no goodbye, its connections dropped. Its leases must
// expire before anyone else may take them.
type Crash struct {
	Slot int `json:"slot"`
}

// Name implements Fault.
func (Crash) Name() string { return "crash" }

// Apply implements Fault.
func (f Crash) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := slotID(env, f.Slot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Removes: true, Params: map[string]string{"slot": strconv.Itoa(f.Slot)}}
	return nil, a, env.Crash(id)
}
