package checker

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/history"
)

func TestVisualizeLinearizability(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		b    *builder
	}{
		{"linearizable", linOnly().life("a", history.LifeStarted, 0).
			op("a", history.OpAcquire, key, "a", s, 0, ms(10), true, "").
			fault("f1", "redis-restart", ms(500), ms(700), false, true).
			op("b", history.OpAcquire, key, "b", s, ms(800), ms(810), true, "")},
		{"violated", linOnly().life("a", history.LifeStarted, 0).
			op("a", history.OpAcquire, key, "a", s, 0, ms(10), true, "").
			fault("f1", "partition", ms(500), ms(700), false, false, "a").
			op("b", history.OpAcquire, key, "b", s, ms(800), ms(810), true, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, VisualizeLinearizability(&buf, tc.b.build(), DefaultOptions()))
			html := buf.String()
			require.Contains(t, html, "<html")
			require.Contains(t, html, `"Tag":"fault"`)
			require.Contains(t, html, `"Description":"f1 `)
			require.Contains(t, html, `"Tag":"lifecycle"`)
			require.Contains(t, html, `"Description":"a started"`)
			require.Contains(t, html, "acquire(b, 1s)")
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestVisualizeLinearizabilityWriteError(t *testing.T) {
	err := VisualizeLinearizability(failingWriter{}, healthy().build(), DefaultOptions())
	require.ErrorIs(t, err, ErrVisualize)
	require.ErrorContains(t, err, "disk full")
}

func TestVisualizeLinearizabilityAfterTimeout(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, VisualizeLinearizability(&buf, pathological(24).build(), Options{LinearizabilityTimeout: 50 * time.Millisecond}))
	require.Contains(t, buf.String(), "<html")
}
