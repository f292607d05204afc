package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/baselines"
)

// lockedBuffer is a bytes.Buffer safe for the instances' concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// topKeys returns the keys of a JSON object in order, duplicates included.
func topKeys(t *testing.T, line []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	require.NoError(t, err)
	require.Equal(t, json.Delim('{'), tok)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
	}
	return keys
}

// Every system's log lines carry each key once, and the naive baseline logs what it does like the
// reference does.
func TestInstanceLogsHaveEachKeyOnce(t *testing.T) {
	t.Parallel()
	for _, sys := range []sim.System{baselines.Naive{}, mustLookup(t, "reference")} {
		t.Run(sys.Name(), func(t *testing.T) {
			var buf lockedBuffer
			sc := sim.Scenario{Name: "logs", Instances: 1, Endpoints: 2, Duration: 60 * time.Second}
			_, err := sim.Run(context.Background(), sim.Options{System: sys, Scenario: sc, Seed: 1, TimeScale: 0.1, Backend: "embedded", Log: &buf})
			require.NoError(t, err)
			buf.mu.Lock()
			defer buf.mu.Unlock()
			var msgs []string
			sc2 := bufio.NewScanner(&buf.b)
			for sc2.Scan() {
				keys := topKeys(t, sc2.Bytes())
				seen := map[string]bool{}
				for _, k := range keys {
					require.False(t, seen[k], "key %q twice in %s", k, sc2.Text())
					seen[k] = true
				}
				require.True(t, seen["instance"], sc2.Text())
				var m struct{ Msg string }
				require.NoError(t, json.Unmarshal(sc2.Bytes(), &m))
				msgs = append(msgs, m.Msg)
			}
			all := strings.Join(msgs, "\n")
			require.Contains(t, all, "started")
			require.Contains(t, all, "acquire ok")
		})
	}
}

func mustLookup(t *testing.T, name string) sim.System {
	t.Helper()
	s, err := sim.Lookup(name)
	require.NoError(t, err)
	return s
}
