package instance_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/systems/instance"
)

func environment(over map[string]string) func(string) string {
	env := map[string]string{
		"TENURE_PROTOCOL": "1", "TENURE_INSTANCE_ID": "i0-1-abc", "TENURE_SEED": "-42", "TENURE_KIND": "lease",
		"TENURE_REDIS_ADDR": "127.0.0.1:1", "TENURE_REDIS_NODES": "127.0.0.1:1", "TENURE_KEY_PREFIX": "poll:",
		"TENURE_SESSION_PREFIX": "session:", "TENURE_TARGETS": "ep-0,ep-1", "TENURE_LEASE_TTL_MS": "3000",
		"TENURE_RENEW_INTERVAL_MS": "1000", "TENURE_HEARTBEAT_INTERVAL_MS": "1000", "TENURE_HEARTBEAT_TTL_MS": "3000",
		"TENURE_DISCOVERY_INTERVAL_MS": "1000", "TENURE_POLL_INTERVAL_MS": "500", "TENURE_POLL_DURATION_MS": "100",
		"TENURE_OP_TIMEOUT_MS": "300", "TENURE_DRIFT_BOUND": "0.01", "TENURE_FENCING": "1",
		"TENURE_READY_TIMEOUT_MS": "10000", "TENURE_STOP_TIMEOUT_MS": "6000", "TENURE_HARNESS_URL": "http://127.0.0.1:2",
	}
	for k, v := range over {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

func TestReadEnv(t *testing.T) {
	e, err := instance.ReadEnv(environment(nil))
	require.NoError(t, err)
	require.Equal(t, int64(-42), e.Seed)
	require.Equal(t, []string{"ep-0", "ep-1"}, e.Targets)
	require.Equal(t, 3*time.Second, e.Timing.LeaseTTL)
	require.Equal(t, 100*time.Millisecond, e.Timing.PollDuration)
	require.Equal(t, 0.01, e.Timing.DriftBound)
	require.True(t, e.Fencing)

	for over, want := range map[[2]string]string{
		{"TENURE_PROTOCOL", "2"}:              `TENURE_PROTOCOL is "2"`,
		{"TENURE_PROTOCOL", ""}:               `TENURE_PROTOCOL is ""`,
		{"TENURE_INSTANCE_ID", ""}:            "TENURE_INSTANCE_ID: not set",
		{"TENURE_LEASE_TTL_MS", "3s"}:         `TENURE_LEASE_TTL_MS: "3s": want a whole number of milliseconds`,
		{"TENURE_SEED", "x"}:                  `TENURE_SEED: "x"`,
		{"TENURE_KIND", "lock"}:               `TENURE_KIND: "lock"`,
		{"TENURE_FENCING", "yes"}:             `TENURE_FENCING: "yes"`,
		{"TENURE_DRIFT_BOUND", "2"}:           `TENURE_DRIFT_BOUND: "2"`,
		{"TENURE_HARNESS_URL", "127.0.0.1:2"}: `TENURE_HARNESS_URL: "127.0.0.1:2"`,
	} {
		_, err := instance.ReadEnv(environment(map[string]string{over[0]: over[1]}))
		require.ErrorContains(t, err, want)
	}
}
