package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WirePause freezes the instance in Slot (or the holder of Of) at a chosen point of its conversation
// with Redis, where check-then-act races live: just before the first command named Command leaves it,
// or, with After, once the reply to that command has reached it. The pause lasts For, then the
// instance carries on from where it stood. A renewal written as GET then EXPIRE, paused after its GET's
// reply for longer than the TTL, wakes to send its EXPIRE on a key that expired meanwhile and may be
// someone else's; a release written as GET then DEL, paused before the DEL, deletes what it no longer
// owns.
//
// The step arms the pause; it takes hold at the first matching command or reply while the step lasts,
// at most once, and a pause that took hold runs its full length: the step ends when it does, if later. A system
// that never sends Command (one that renews with a script) is never paused: that is the point of an
// atomic renewal. The pause is the same freeze as Pause, taken at a command rather than at a poll: a
// process system's process group gets SIGSTOP (its held command leaves on waking, its reply waits in
// its socket buffer), an instance in this process has its clock and calls stopped (see Pause for what
// that freeze does not stop). Its window is the step's; the history's "paused" and "resumed" events
// say when the pause held.
type WirePause struct {
	Slot int `json:"slot"`
	// Of, when set, targets the instance holding this endpoint (or leading this role) instead of Slot.
	Of string `json:"of,omitempty"`
	// OrSlot, with Of, targets the instance in Slot when nobody holds Of at that moment.
	OrSlot bool `json:"or_slot,omitempty"`
	// Command is the Redis command the pause waits for (GET, EXPIRE, DEL, ...: a name, in any case), or
	// several separated by "|" (GET|EXISTS: the first of them to come).
	Command string `json:"command"`
	// After pauses once the command's reply has reached the instance, before it acts on it; without
	// it, the pause comes just before the command leaves.
	After bool `json:"after,omitempty"`
	// For is how long the pause lasts once it has taken hold.
	For time.Duration `json:"for"`
	// Within, when set, ends the arming that long after the step starts (the step then lasts long
	// enough to hold the pause too); zero arms it for the whole step.
	Within time.Duration `json:"within,omitempty"`
}

// WirePauser is the part of an Env that can pause an instance at a command. An Env without it cannot
// carry out a WirePause.
type WirePauser interface {
	// PauseAtWire arms the pause on the instance id; end calls it off if it has not taken hold, and
	// waits for the end of one that has.
	// Within, when positive, disarms it that long after it was armed.
	PauseAtWire(id, command string, after bool, d, within time.Duration) (end func(context.Context) error, err error)
}

// Name implements Fault.
func (WirePause) Name() string { return "wire-pause" }

// Scaled implements Scaler: the pause's length is part of the scenario's timing.
func (f WirePause) Scaled(by float64) Fault {
	f.For = time.Duration(float64(f.For) * by)
	f.Within = time.Duration(float64(f.Within) * by)
	return f
}

// MarshalJSON writes the pause's length as text ("45s").
func (f WirePause) MarshalJSON() ([]byte, error) {
	m := map[string]any{"slot": f.Slot, "command": f.Command, "for": ms(f.For)}
	if f.Of != "" {
		m["of"] = f.Of
	}
	if f.After {
		m["after"] = true
	}
	if f.Within > 0 {
		m["within"] = ms(f.Within)
	}
	return json.Marshal(m)
}

// Where says where the pause takes hold, in words: "after the reply to GET", "before EXPIRE", "before
// EXPIRE or DEL".
func (f WirePause) Where() string {
	names := strings.Join(WireCommands(f.Command), " or ")
	if f.After {
		return "after the reply to " + names
	}
	return "before " + names
}

// WireCommands splits a WirePause's Command into its names, upper case.
func WireCommands(command string) []string {
	var out []string
	for _, n := range strings.Split(command, "|") {
		out = append(out, strings.ToUpper(strings.TrimSpace(n)))
	}
	return out
}

// Validate checks the fault's own parameters.
func (f WirePause) Validate() error {
	bad := strings.TrimSpace(f.Command) == "" || strings.ContainsAny(f.Command, " \t\r\n")
	for _, n := range WireCommands(f.Command) {
		bad = bad || n == ""
	}
	switch {
	case bad:
		return fmt.Errorf("wire-pause: command %q must be a Redis command name (GET, EXPIRE, DEL, ...), or several separated by |", f.Command)
	case f.For <= 0:
		return fmt.Errorf("wire-pause: for must be a positive duration (how long the pause lasts), got %v", f.For)
	case f.Within < 0:
		return fmt.Errorf("wire-pause: within must not be negative (zero arms the pause for the whole step), got %v", f.Within)
	}
	return nil
}

// Apply implements Fault.
func (f WirePause) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	wp, ok := env.(WirePauser)
	if !ok {
		return nil, Applied{}, fmt.Errorf("%w: this environment cannot pause an instance at a command", ErrUnsupported)
	}
	if err := f.Validate(); err != nil {
		return nil, Applied{}, err
	}
	id, err := targetOr(env, f.Slot, f.Of, f.OrSlot)
	if err != nil {
		return nil, Applied{}, err
	}
	a := Applied{Targets: []string{id}, Params: map[string]string{"slot": strconv.Itoa(f.Slot), "command": strings.Join(WireCommands(f.Command), "|"),
		"at": f.Where(), "for": ms(f.For)}}
	if f.Of != "" {
		delete(a.Params, "slot")
		a.Params["of"] = f.Of
	}
	if f.Within > 0 {
		a.Params["within"] = ms(f.Within)
	}
	end, err := wp.PauseAtWire(id, f.Command, f.After, f.For, f.Within)
	if err != nil {
		return nil, a, err
	}
	return end, a, nil
}
