package chaos

import (
	"context"
	"encoding/json"
	"time"
)

// Latency slows the links of the instance in Slot (every live instance when Slot < 0) by Latency ±
// Jitter per round trip.
type Latency struct {
	Slot    int           `json:"slot"`
	Latency time.Duration `json:"latency"`
	Jitter  time.Duration `json:"jitter,omitempty"`
}

// Name implements Fault.
func (Latency) Name() string { return "latency" }

// Scaled implements Scaler: the delay is part of the scenario's timing.
func (f Latency) Scaled(by float64) Fault {
	f.Latency = time.Duration(float64(f.Latency) * by)
	f.Jitter = time.Duration(float64(f.Jitter) * by)
	return f
}

// MarshalJSON writes durations as text ("600ms").
func (f Latency) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"slot": f.Slot, "latency": ms(f.Latency), "jitter": ms(f.Jitter)})
}

// Apply implements Fault.
func (f Latency) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	ids := env.Live()
	if f.Slot >= 0 {
		id, err := slotID(env, f.Slot)
		if err != nil {
			return nil, Applied{}, err
		}
		ids = []string{id}
	}
	a := Applied{Targets: ids, Params: map[string]string{"latency": ms(f.Latency), "jitter": ms(f.Jitter)}}
	links, err := linksOf(env, ids)
	if err != nil {
		return nil, a, err
	}
	for _, l := range links {
		if err := l.Latency(f.Latency, f.Jitter); err != nil {
			return healAll(links), a, err
		}
	}
	return healAll(links), a, nil
}
