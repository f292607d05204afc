package chaos_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

// signalEnv is a fakeEnv that can stop an instance after cancelling its start context, and start one
// behind a cut link.
type signalEnv struct {
	fakeEnv
	stopErr error
}

func (e *signalEnv) SignalStop(_ context.Context, id string) (error, error) {
	e.log("signal-stop " + id)
	return e.stopErr, nil
}

func (e *signalEnv) AbortStart(_ context.Context, after time.Duration) (string, map[string]string, error) {
	e.log("abort-start " + after.String())
	return "n1", map[string]string{"stop_error": "link cut"}, nil
}

// A signal stop goes through the Signaller and records what Stop returned as a parameter, not as the
// fault's failure; an environment without one refuses it.
func TestSignalStop(t *testing.T) {
	env := &signalEnv{fakeEnv: fakeEnv{live: []string{"a", "b"}}, stopErr: errors.New("not running")}
	_, a, err := chaos.Stop{Slot: 1, Signal: true}.Apply(context.Background(), env)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, a.Targets)
	require.True(t, a.Removes)
	require.Equal(t, "not running", a.Params["stop_error"])
	require.Contains(t, env.calls, "signal-stop b")

	_, _, err = chaos.Stop{Slot: 0, Signal: true}.Apply(context.Background(), &fakeEnv{live: []string{"a"}})
	require.ErrorIs(t, err, chaos.ErrUnsupported)
}

func TestAbortedStart(t *testing.T) {
	env := &signalEnv{}
	f := chaos.AbortedStart{After: 5 * time.Second}.Scaled(0.1)
	_, a, err := f.Apply(context.Background(), env)
	require.NoError(t, err)
	require.Equal(t, []string{"n1"}, a.Targets)
	require.True(t, a.Removes)
	require.Equal(t, "link cut", a.Params["stop_error"])
	require.Equal(t, []string{"abort-start 500ms"}, env.calls)

	_, _, err = chaos.AbortedStart{After: time.Second}.Apply(context.Background(), &fakeEnv{})
	require.ErrorIs(t, err, chaos.ErrUnsupported)
}

// answeringEnv is a fakeEnv whose Stop returns err.
type answeringEnv struct {
	fakeEnv
	err error
}

func (e *answeringEnv) Stop(_ context.Context, id string) error {
	e.log("stop " + id)
	return e.err
}

// A plain stop whose instance stopped but whose own Stop returned an error (releases it could not send
// while its backend was down) is carried out: the error is recorded as the system's answer. Any other
// error of the environment's is the fault's failure.
func TestAStopAnsweredWithAnErrorIsCarriedOut(t *testing.T) {
	env := &answeringEnv{fakeEnv: fakeEnv{live: []string{"a"}}, err: &chaos.StopAnswer{Err: errors.New("release: connection refused")}}
	_, a, err := chaos.Stop{Slot: 0}.Apply(context.Background(), env)
	require.NoError(t, err)
	require.Equal(t, "release: connection refused", a.Params["stop_error"])

	env = &answeringEnv{fakeEnv: fakeEnv{live: []string{"a"}}, err: errors.New("Stop panicked")}
	_, a, err = chaos.Stop{Slot: 0}.Apply(context.Background(), env)
	require.ErrorContains(t, err, "Stop panicked")
	require.Empty(t, a.Params["stop_error"])
}
