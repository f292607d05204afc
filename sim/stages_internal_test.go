package sim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// The teardown closes what the set-up opened, last first; an error of it fails a run that produced
// nothing, and is only listed for a run that produced a history.
func TestTeardownClosesLastFirstAndRoutesErrors(t *testing.T) {
	t.Parallel()
	var order []string
	var td teardown
	td.add(func() error { order = append(order, "backend"); return errors.New("backend would not stop") })
	td.add(func() error { order = append(order, "proxies"); return nil })
	td.add(func() error { order = append(order, "instances"); return errors.New("namespace left") })

	var res Result
	var err error
	td.run(&res, &err)
	require.Equal(t, []string{"instances", "proxies", "backend"}, order)
	require.ErrorContains(t, err, "namespace left")
	require.ErrorContains(t, err, "backend would not stop")
	require.Empty(t, res.CleanupErrors)

	res = Result{History: history.History{Events: []history.Event{{Kind: history.KindPoll}}}}
	err = nil
	td.run(&res, &err)
	require.NoError(t, err)
	require.Equal(t, []string{"namespace left", "backend would not stop"}, res.CleanupErrors)
}

type handshakeless struct{ System }

func (handshakeless) HandshakeReplies() int { return 0 }

// The history records how many set-up replies a fresh connection waits for, which the bound table
// multiplies a hold by: the harness's own go-redis clients' two, unless the system says otherwise.
func TestHistoryRecordsTheConnectionSetUp(t *testing.T) {
	t.Parallel()
	tm := SpecTiming()
	require.Equal(t, DefaultHandshakeReplies, metaTiming(nil, tm).HandshakeReplies)
	require.Equal(t, 0, metaTiming(handshakeless{}, tm).HandshakeReplies)
}
