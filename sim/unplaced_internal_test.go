package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

// A write the recorder cannot model, on a key outside the harness's layout, is noted once per instance
// with how to map it; a library prefix declared in the system file makes the built-in classifier model
// its plain commands.
func TestAnUnplacedKeyIsNotedWithHowToMapIt(t *testing.T) {
	notes := func(u *unplacedKeys, cmds ...[]any) []string {
		rec := history.NewRecorder(func() time.Duration { return 0 })
		h := opRecorder{instance: "i0", rec: rec, defaults: defaultClassifier{leasePrefix: u.libPrefix + u.keyPrefix + "lease:"}, unplaced: u}
		for _, c := range cmds {
			h.record(0, time.Millisecond, c, "OK", nil, false)
		}
		var out []string
		for _, e := range rec.Events() {
			if e.Kind == history.KindNote {
				out = append(out, e.Note)
			}
		}
		return out
	}
	acquire := func(key string) []any { return []any{"set", key, "i0", "nx", "px", "3000"} }

	n := notes(&unplacedKeys{keyPrefix: "poll:"}, acquire("mutex:poll:lease:ep-1"), acquire("mutex:poll:lease:ep-2"))
	require.Len(t, n, 1, "once per instance")
	require.Contains(t, n[0], history.NoteUnplacedKey+"mutex:poll:lease:ep-1 by i0 (set)")
	require.Contains(t, n[0], `"keys": {"prefix": "mutex:"}`)

	n = notes(&unplacedKeys{keyPrefix: "poll:"}, acquire("lock:ep-1"))
	require.Len(t, n, 1)
	require.Contains(t, n[0], "it names no endpoint: give the library poll:lease:<endpoint> as each lock's name")

	require.Empty(t, notes(&unplacedKeys{keyPrefix: "poll:"}, acquire("poll:lease:ep-1"), []any{"set", "poll:node:i0", "1", "px", "3000"}),
		"the harness's layout, and bookkeeping under its prefix")
	require.Empty(t, notes(&unplacedKeys{keyPrefix: "poll:"}, []any{"get", "mutex:poll:lease:ep-1"}), "a read writes nothing")

	// Declared, the prefix is the layout: the acquire is modelled, on the endpoint it names.
	u := &unplacedKeys{keyPrefix: "poll:", libPrefix: "mutex:"}
	require.Empty(t, notes(u, acquire("mutex:poll:lease:ep-1")))
	op := defaultClassifier{leasePrefix: "mutex:poll:lease:"}.Classify(acquire("mutex:poll:lease:ep-1"), "OK", nil)
	require.Equal(t, history.OpAcquire, op.Kind)
	require.Equal(t, "ep-1", endpointOf(op.Key))
}
