package history_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestRoundTrip(t *testing.T) {
	var now time.Duration
	rec := history.NewRecorder(func() time.Duration { return now })
	now = 2 * time.Second
	rec.Add(history.Event{Kind: history.KindPoll, At: rec.Now(), End: 3 * time.Second, Instance: "a", Endpoint: "e",
		Poll: &history.Poll{Token: 7, Outcome: history.PollOK}})
	now = time.Second // events may complete out of order; the history is sorted by start
	rec.Add(history.Event{Kind: history.KindOp, At: rec.Now(), End: history.Infinity, Instance: "a",
		Op: &history.Op{Kind: history.OpAcquire, Key: "poll:lease:e", Owner: "a", TTL: time.Second, Unknown: true}})
	require.Equal(t, 2, rec.Len())

	h := history.History{Meta: history.Meta{Scenario: "s", Kind: "lease", Seed: 42}, Events: rec.Events()}
	require.Equal(t, history.KindOp, h.Events[0].Kind)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	require.NoError(t, history.WriteFile(path, h))
	got, err := history.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, history.SchemaVersion, got.Meta.Schema)
	require.Equal(t, int64(42), got.Meta.Seed)
	require.Equal(t, h.Events, got.Events)
	require.Equal(t, history.Infinity, got.Events[0].End)
}

func TestReadRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"empty":        {"", "empty file"},
		"bad header":   {"{not json\n", "line 1 (header)"},
		"newer schema": {`{"schema": 99}` + "\n", "unsupported schema version 99"},
		"bad event":    {`{"schema": 1}` + "\n" + `{"seq": "x"}` + "\n", "line 2"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := history.Read(strings.NewReader(tc.in))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestWindowContains(t *testing.T) {
	w := history.Window{From: time.Second, To: 2 * time.Second}
	require.True(t, w.Contains(time.Second))
	require.True(t, w.Contains(2*time.Second))
	require.False(t, w.Contains(2*time.Second+1))
	var buf bytes.Buffer
	require.NoError(t, history.Write(&buf, history.History{}))
	require.Contains(t, buf.String(), `"schema":4`)
}

// SetLanded sets Op.Landed on the operation with that Seq only, and leaves the copies Events returned
// before as they were.
func TestSetLanded(t *testing.T) {
	rec := history.NewRecorder(func() time.Duration { return time.Second })
	op := rec.Add(history.Event{Kind: history.KindOp, At: time.Second, End: history.Infinity, Instance: "a",
		Op: &history.Op{Kind: history.OpRenew, Key: "k", Unknown: true}})
	note := rec.Add(history.Event{Kind: history.KindNote, At: time.Second, Note: "n"})
	before := rec.Events()
	require.True(t, rec.SetLanded(op, 3*time.Second))
	require.False(t, rec.SetLanded(note, 3*time.Second), "a note has no operation")
	require.False(t, rec.SetLanded(99, 3*time.Second), "no such event")
	require.Zero(t, before[0].Op.Landed, "an earlier copy is not changed")
	require.Equal(t, 3*time.Second, rec.Events()[0].Op.Landed)
}
