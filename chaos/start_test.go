package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

// failingStarts fails the starts whose (1-based) number is in fail.
type failingStarts struct {
	fakeEnv
	smu  sync.Mutex
	seen int
	fail map[int]bool
}

func (e *failingStarts) StartInstance(ctx context.Context) (string, error) {
	e.smu.Lock()
	e.seen++
	k := e.seen
	e.smu.Unlock()
	if e.fail[k] {
		return "", fmt.Errorf("start #%d refused", k)
	}
	return e.fakeEnv.StartInstance(ctx)
}

// A scale-up attempts every start, whatever fails, and names each failure.
func TestStartAttemptsEveryInstanceAndReportsEachFailure(t *testing.T) {
	env := &failingStarts{fail: map[int]bool{1: true, 4: true}}
	_, a, err := chaos.Start{Count: 20}.Apply(context.Background(), env)
	require.Error(t, err)
	require.Equal(t, 20, env.seen, "every start attempted")
	require.Len(t, a.Targets, 18, "the instances that started are the fault's targets")
	require.Len(t, env.Live(), 18)
	require.Contains(t, err.Error(), "2 of 20 instances did not start")
	require.Contains(t, err.Error(), "start #1 refused")
	require.Contains(t, err.Error(), "start #4 refused")
	require.Equal(t, 2, strings.Count(err.Error(), "refused"))

	env = &failingStarts{}
	_, a, err = chaos.Start{Count: 3}.Apply(context.Background(), env)
	require.NoError(t, err)
	require.Len(t, a.Targets, 3)
}
