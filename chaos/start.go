package chaos

import (
	"context"
	"strconv"
)

// Start adds Count new instances to the fleet (scale up).
type Start struct {
	Count int `json:"count"`
}

// Name implements Fault.
func (Start) Name() string { return "start" }

// Apply implements Fault.
func (f Start) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	n := f.Count
	if n <= 0 {
		n = 1
	}
	a := Applied{Params: map[string]string{"count": strconv.Itoa(n)}}
	for i := 0; i < n; i++ {
		id, err := env.StartInstance(ctx)
		if err != nil {
			return nil, a, err
		}
		a.Targets = append(a.Targets, id)
	}
	return nil, a, nil
}
