package chaos

import (
	"context"
	"strconv"
)

// Drift makes the clock of the instance in Slot run at Rate times real time for the step's duration
// (0.99 loses 1%, 1.01 gains 1%). The reference tolerates drift up to its configured bound.
type Drift struct {
	Slot int     `json:"slot"`
	Rate float64 `json:"rate"`
}

// Name implements Fault.
func (Drift) Name() string { return "clock-drift" }

// Apply implements Fault.
func (f Drift) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, err := slotID(env, f.Slot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot), "rate": strconv.FormatFloat(f.Rate, 'f', -1, 64)}}
	if err := env.SetClockRate(id, f.Rate); err != nil {
		return nil, a, err
	}
	return func(context.Context) error { return env.SetClockRate(id, 1) }, a, nil
}
