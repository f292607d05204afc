package sim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A panic in a system's Start or Stop becomes an error naming the call, not the end of the run.
func TestProtectTurnsPanicIntoError(t *testing.T) {
	t.Parallel()
	err := protect("Stop", func() error {
		var f func()
		f() // what Stop during Start did before it was guarded: a nil function called
		return nil
	})
	var pe *panicError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "Stop panicked: runtime error")
	plain := errors.New("not running")
	require.Equal(t, plain, protect("Start", func() error { return plain }))
}
