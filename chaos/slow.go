package chaos

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// SlowRequests holds every request the instance in Slot (or the holder of Of) sends during the step
// for Delay, then delivers it: a renewal or a release that lands long after the client gave up on it,
// possibly after the lease changed hands. Requests sent after the step ends are not held, so a fresh
// connection's request can overtake one held on an older connection, as on a real network; data held
// when the step ends still lands at its own time.
//
// Match, when set, holds only the requests whose bytes contain it (for example "release " to hold the
// reference's release calls, whose announcement carries that word), as a delayed packet would; a later
// request on the same connection waits behind it.
type SlowRequests struct {
	Slot  int           `json:"slot"`
	Of    string        `json:"of,omitempty"`
	Delay time.Duration `json:"delay"`
	Match string        `json:"match,omitempty"`
	// OrSlot, with Of, targets the instance in Slot when nobody holds Of at that moment.
	OrSlot bool `json:"-"`
}

// SlowReplies holds every reply to the instance in Slot (or the holder of Of) during the step for Delay,
// then delivers it. A client whose call timeout is shorter than Delay never sees it: its request took
// effect, its reply came too late.
type SlowReplies struct {
	Slot  int           `json:"slot"`
	Of    string        `json:"of,omitempty"`
	Delay time.Duration `json:"delay"`
}

// Name implements Fault.
func (SlowRequests) Name() string { return "slow-requests" }

// Name implements Fault.
func (SlowReplies) Name() string { return "slow-replies" }

// Scaled implements Scaler: the delay is part of the scenario's timing.
func (f SlowRequests) Scaled(by float64) Fault {
	f.Delay = time.Duration(float64(f.Delay) * by)
	return f
}

// Scaled implements Scaler.
func (f SlowReplies) Scaled(by float64) Fault {
	f.Delay = time.Duration(float64(f.Delay) * by)
	return f
}

// MarshalJSON writes the delay as text ("45s").
func (f SlowRequests) MarshalJSON() ([]byte, error) { return slowJSON(f.Slot, f.Of, f.Delay, f.Match) }

// MarshalJSON writes the delay as text ("45s").
func (f SlowReplies) MarshalJSON() ([]byte, error) { return slowJSON(f.Slot, f.Of, f.Delay, "") }

func slowJSON(slot int, of string, d time.Duration, match string) ([]byte, error) {
	m := map[string]any{"slot": slot, "delay": ms(d)}
	if of != "" {
		m["of"] = of
	}
	if match != "" {
		m["match"] = match
	}
	return json.Marshal(m)
}

// Apply implements Fault.
func (f SlowRequests) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	return applySlow(env, f.Slot, f.Of, f.OrSlot, f.Delay, true, f.Match)
}

// Apply implements Fault.
func (f SlowReplies) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	return applySlow(env, f.Slot, f.Of, false, f.Delay, false, "")
}

func applySlow(env Env, slot int, of string, or bool, d time.Duration, requests bool, match string) (func(context.Context) error, Applied, error) {
	id, l, err := targetLinkOr(env, slot, of, or)
	if err != nil {
		return nil, Applied{}, err
	}
	dir := "replies"
	if requests {
		dir = "requests"
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(slot), "held": dir, "delay": ms(d)}}
	if match != "" {
		a.Params["match"] = match
	}
	err = l.Hold(requests, d, match)
	return func(context.Context) error { return l.EndHold() }, a, err
}
