package chaos

import (
	"context"
	"strconv"
)

// Partition cuts the instance in Slot off from the backend for the step's duration. Both ways by
// default: nothing passes, connections hang. With OneWay, requests still arrive and take effect but
// every reply is lost — the case where a client's automatic retry re-sends a command that already ran.
// A connection opened during a one-way partition still gets the replies to its handshake (see
// Link.DropReplies), so re-sends on fresh connections keep landing, as they would on a real network
// that loses only one direction.
type Partition struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of     string `json:"of,omitempty"`
	OneWay bool   `json:"one_way,omitempty"`
	// OrSlot, with Of, targets the instance in Slot when nobody holds Of at that moment, instead of
	// failing the step (the composing nemesis aims at holders it cannot foresee).
	OrSlot bool `json:"or_slot,omitempty"`
}

// Name implements Fault.
func (f Partition) Name() string {
	if f.OneWay {
		return "one-way-partition"
	}
	return "partition"
}

// Apply implements Fault.
func (f Partition) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	id, l, err := targetLinkOr(env, f.Slot, f.Of, f.OrSlot)
	if err != nil {
		return nil, Applied{}, err
	}
	dir := "both"
	if f.OneWay {
		dir = "replies-lost"
		err = l.DropReplies()
	} else {
		err = l.Partition()
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot), "direction": dir}}
	// Even a partly applied partition gets its end, so nothing stays behind.
	return func(context.Context) error { return l.Heal() }, a, err
}
