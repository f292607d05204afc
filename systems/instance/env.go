// Package instance runs Tenure's own systems (the reference lease manager, the Redis election) as
// processes under the process protocol (docs/protocol.md): cmd/tenure-instance is a main around Main.
// It is also a Go client of the protocol (Env, Harness) for anyone writing a process instance in Go.
package instance

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tenurelabs/tenure/sim"
)

// Env is what the harness tells an instance through its environment.
type Env struct {
	ID            string
	Seed          int64
	Kind          string // "lease" or "election"
	RedisAddr     string
	RedisNodes    []string
	KeyPrefix     string
	SessionPrefix string
	Targets       []string
	Timing        sim.Timing
	Fencing       bool
	ReadyTimeout  time.Duration
	StopTimeout   time.Duration
	HarnessURL    string
}

// ReadEnv reads the protocol's variables through get (os.Getenv). Every error names the variable.
func ReadEnv(get func(string) string) (Env, error) {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	need := func(name string) string {
		v := get(name)
		if v == "" {
			bad(name, "not set")
		}
		return v
	}
	if v := get("TENURE_PROTOCOL"); v != "1" {
		return Env{}, fmt.Errorf("TENURE_PROTOCOL is %q: this program speaks version 1 of the process protocol (docs/protocol.md), and runs under simrun", v)
	}
	ms := func(name string) time.Duration {
		v := need(name)
		if v == "" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			bad(name, "%q: want a whole number of milliseconds", v)
		}
		return time.Duration(n) * time.Millisecond
	}
	list := func(name string) []string {
		v := get(name)
		if v == "" {
			return nil
		}
		return strings.Split(v, ",")
	}
	e := Env{
		ID: need("TENURE_INSTANCE_ID"), Kind: need("TENURE_KIND"), RedisAddr: need("TENURE_REDIS_ADDR"),
		RedisNodes: list("TENURE_REDIS_NODES"), KeyPrefix: need("TENURE_KEY_PREFIX"), SessionPrefix: need("TENURE_SESSION_PREFIX"),
		Targets: list("TENURE_TARGETS"), HarnessURL: need("TENURE_HARNESS_URL"),
		Timing: sim.Timing{
			LeaseTTL: ms("TENURE_LEASE_TTL_MS"), RenewInterval: ms("TENURE_RENEW_INTERVAL_MS"),
			HeartbeatInterval: ms("TENURE_HEARTBEAT_INTERVAL_MS"), HeartbeatTTL: ms("TENURE_HEARTBEAT_TTL_MS"),
			DiscoveryInterval: ms("TENURE_DISCOVERY_INTERVAL_MS"), PollInterval: ms("TENURE_POLL_INTERVAL_MS"),
			PollDuration: ms("TENURE_POLL_DURATION_MS"), OpTimeout: ms("TENURE_OP_TIMEOUT_MS"),
		},
		ReadyTimeout: ms("TENURE_READY_TIMEOUT_MS"), StopTimeout: ms("TENURE_STOP_TIMEOUT_MS"),
	}
	if v := need("TENURE_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			bad("TENURE_SEED", "%q: want a signed 64-bit integer", v)
		}
		e.Seed = n
	}
	if v := need("TENURE_DRIFT_BOUND"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f >= 1 {
			bad("TENURE_DRIFT_BOUND", "%q: want a rate from 0 to 1, e.g. 0.01", v)
		}
		e.Timing.DriftBound = f
	}
	switch v := need("TENURE_FENCING"); v {
	case "1":
		e.Fencing = true
	case "0", "":
	default:
		bad("TENURE_FENCING", "%q: want 1 or 0", v)
	}
	if e.Kind != "" && e.Kind != "lease" && e.Kind != "election" {
		bad("TENURE_KIND", "%q: want lease or election", e.Kind)
	}
	if e.HarnessURL != "" {
		if u, err := url.Parse(e.HarnessURL); err != nil || u.Scheme != "http" || u.Host == "" {
			bad("TENURE_HARNESS_URL", "%q: want http://HOST:PORT", e.HarnessURL)
		}
	}
	if len(e.RedisNodes) == 0 && e.RedisAddr != "" {
		e.RedisNodes = []string{e.RedisAddr}
	}
	return e, errors.Join(errs...)
}
