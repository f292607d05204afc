package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AbortedStart starts a new instance whose link to the backend is cut both ways from the outset, so its
// Start cannot finish and keeps retrying; After later, with the link still cut, it stops the instance
// gracefully. Stop during Start must make Start give up and return: nothing may panic or hang, and the
// instance must leave nothing running. To show that, the link is healed once Stop has returned and the
// instance is watched for a while (its longest retry backoff) before it is removed: a backend command
// it sends then comes from a start that outlived its Stop, and fails the fault.
//
// What Start and Stop return is recorded with the fault ("start_error", "stop_error"): with the link
// cut, a Stop that tries to clean up cannot reach the backend. A panic in either, a Start that returns
// on its own while the link is cut (it did not retry), or one that is still running after Stop
// returned, is the fault's failure.
type AbortedStart struct {
	// After is how long after Start began the instance is stopped.
	After time.Duration `json:"after"`
}

// StartAborter is the part of an Env that can start an instance behind a cut link and stop it before
// the link heals. An Env without it cannot carry out an AbortedStart.
type StartAborter interface {
	// AbortStart starts the instance with its link cut, stops it after the given time, heals the link,
	// watches it and removes it. notes carry what Start and Stop returned; err is the fault's failure.
	AbortStart(ctx context.Context, after time.Duration) (id string, notes map[string]string, err error)
}

// Name implements Fault.
func (AbortedStart) Name() string { return "aborted-start" }

// Scaled implements Scaler.
func (f AbortedStart) Scaled(by float64) Fault {
	f.After = time.Duration(float64(f.After) * by)
	return f
}

// MarshalJSON writes the delay as text ("5s").
func (f AbortedStart) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"after": ms(f.After)})
}

// Apply implements Fault.
func (f AbortedStart) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	a := Applied{Removes: true, Params: map[string]string{"after": ms(f.After)}}
	ab, ok := env.(StartAborter)
	if !ok {
		return nil, a, fmt.Errorf("%w: this environment cannot start an instance behind a cut link", ErrUnsupported)
	}
	id, notes, err := ab.AbortStart(ctx, f.After)
	if id != "" {
		a.Targets = []string{id}
	}
	for k, v := range notes {
		a.Params[k] = v
	}
	return nil, a, err
}
