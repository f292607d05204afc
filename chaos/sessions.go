package chaos

import (
	"context"
	"fmt"
)

// SessionChange adds, pauses, resumes or removes a poll target at run time. It is a step of the
// schedule but not a fault: the simulator records it as a session event. "flap" pauses the session and
// resumes it when the step ends: at once (within milliseconds) when the step has no duration, so that
// the assignment of its endpoint flaps away and back.
type SessionChange struct {
	// Change is "add", "pause", "resume", "remove" or "flap".
	Change string `json:"change"`
	// ID is the session (endpoint) ID.
	ID string `json:"id"`
}

// Name implements Fault.
func (s SessionChange) Name() string { return "session-" + s.Change }

// IsFault reports false: session changes are ordinary operations, not faults.
func (SessionChange) IsFault() bool { return false }

// Apply implements Fault.
func (s SessionChange) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	ss := env.Sessions()
	var err error
	switch s.Change {
	case "add":
		err = ss.Add(ctx, s.ID)
	case "pause":
		err = ss.Pause(ctx, s.ID)
	case "resume":
		err = ss.Resume(ctx, s.ID)
	case "remove":
		err = ss.Remove(ctx, s.ID)
	case "flap":
		a := Applied{Params: map[string]string{"session": s.ID}}
		if err := ss.Pause(ctx, s.ID); err != nil {
			return nil, a, err
		}
		return func(ctx context.Context) error { return ss.Resume(ctx, s.ID) }, a, nil
	default:
		err = fmt.Errorf("chaos: unknown session change %q (want add, pause, resume, remove or flap)", s.Change)
	}
	return nil, Applied{Params: map[string]string{"session": s.ID}}, err
}
