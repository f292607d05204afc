package lease

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenurelabs/tenure/clock"
)

// Poll is one visit to an endpoint the manager holds.
type Poll struct {
	// Endpoint is the endpoint (target) ID.
	Endpoint string
	// Token is the fencing token of the current holding: larger than every earlier token for this
	// endpoint. A resource that remembers the largest token it has seen can refuse older ones.
	Token uint64
	// Deadline is the local validity deadline when the poll started. Confirmed renewals move it forward
	// while the poll runs; the poll's context, not this field, is authoritative.
	Deadline time.Time

	_ struct{}
}

// PollFunc polls one endpoint. ctx ends when the lease's local validity ends without a confirmed
// renewal, when the lease is lost, on graceful stop timeout and on crash; context.Cause(ctx) says which
// (ErrExpired, ErrLost, ErrRenewFailed, ErrReleased, ErrCrashed). A PollFunc must return promptly once
// ctx is done: the manager guarantees that nobody else holds the lease before ctx ends, not after.
type PollFunc func(ctx context.Context, p Poll) error

// Config configures a Manager. Start from DefaultConfig and set Poll; durations are on Clock.
type Config struct {
	// InstanceID identifies this instance in lease values and heartbeats. Default: NewInstanceID of
	// the host name, the clock's current time and Rand. Must not contain white space.
	InstanceID string
	// KeyPrefix namespaces lease, fence, heartbeat and epoch keys and the pub/sub channel.
	// Default "poll:".
	KeyPrefix string
	// KeyLayout names an endpoint's keys: LayoutSingle (one Redis primary; the default, and the only
	// layout of earlier releases) or LayoutCluster (each endpoint's keys in one hash slot: required on
	// Redis Cluster). The two do not see each other's leases: every instance sharing a KeyPrefix must
	// use the same layout (see the package doc, "Key layouts", for changing it).
	KeyLayout KeyLayout
	// SessionPrefix is where the default target source finds sessions (session:<id>). Default "session:".
	SessionPrefix string
	// SessionResync is how often the default target source reads every session even though the
	// sessions' change counter has not moved (see SessionSource): a change made without incrementing the
	// counter is seen within SessionResync plus one DiscoveryInterval. Default 5m
	// (DefaultSessionResync); at least DiscoveryInterval. Unused when Targets is set.
	SessionResync time.Duration

	// LeaseTTL is the lease key's time to live. Default 30s.
	LeaseTTL time.Duration
	// RenewInterval is how often all held leases are renewed (pipelined, 256 per round trip), and how often
	// unheld assigned endpoints are tried; while the link to Redis is unhealthy it is probed every
	// RenewInterval/2 (see the package doc). Default 10s; at most LeaseTTL/2.
	RenewInterval time.Duration
	// HeartbeatInterval is how often the instance heartbeat is written. Default 10s.
	HeartbeatInterval time.Duration
	// HeartbeatTTL is the heartbeat key's time to live; an instance silent this long is considered gone.
	// Default 30s; more than HeartbeatInterval.
	HeartbeatTTL time.Duration
	// DiscoveryInterval is how often live instances and targets are re-read and the assignment
	// recomputed. Pub/sub notifications trigger extra rounds: the first of a burst at once, the rest
	// of it in one more round DiscoveryInterval/20 later. Default 10s.
	DiscoveryInterval time.Duration
	// PollInterval is the pause between two polls of one held endpoint, less a random 0–10% (so that
	// endpoints acquired together do not stay polled together). Default 1s.
	PollInterval time.Duration
	// OpTimeout bounds every Redis call (one pipelined round trip counts as one call). Default 2s; less than
	// RenewInterval. Also set ContextTimeoutEnabled on the client so this bounds socket reads.
	OpTimeout time.Duration
	// WaitReplicas, when positive, makes a grant or renewal count only once WAIT reports it on that
	// many replicas within OpTimeout; otherwise it fails like a call without a reply (fail closed). It
	// narrows, and does not close, the loss of a lease in a failover: see wait.go and the package doc.
	// Default 0 (off). Not with a ClusterClient.
	WaitReplicas int
	// DriftBound is the largest relative clock rate error assumed between this instance and Redis
	// (0.01 = 1%). Default 0.01; in [0, 0.5).
	DriftBound float64
	// SafetyMargin is subtracted from every local validity deadline to cover scheduling delays between
	// a deadline check and the work it guards. Default 500ms.
	SafetyMargin time.Duration

	// Targets lists the endpoints to poll. Default (nil): sessions in Redis under SessionPrefix
	// (see SessionSource).
	Targets TargetSource
	// Poll is called for each poll of a held endpoint. Required.
	Poll PollFunc
	// Clock is the time source for every deadline, timer and interval. Default clock.Real{}.
	Clock clock.Clock
	// Logger receives structured events. Default: slog.Default().
	Logger *slog.Logger
	// Registerer receives the manager's Prometheus collectors (labelled with the instance ID).
	// Default nil: no metrics. The global registry is never used implicitly.
	Registerer prometheus.Registerer
	// Observe, if set, is called synchronously on every change of ownership belief (acquired, released,
	// lost, expired) and on every confirmed renewal that moves a local deadline (renewed; Event.Until
	// is the new deadline). It must not block: with many endpoints it is called often.
	Observe func(Event)
	// Rand drives timer jitter and the default instance ID. Default: a source seeded from the clock's
	// current time (so runs are not reproducible unless a seeded Rand is given). Used under a lock.
	Rand *rand.Rand

	// variant is which of the safety mechanisms the manager runs without: none (mechanisms.go).
	variant variant

	_ struct{}
}

// DefaultConfig returns the specification's timing: lease TTL 30s renewed every 10s, heartbeat every
// 10s with TTL 30s, discovery every 10s. Poll must still be set.
func DefaultConfig() Config {
	return Config{
		KeyPrefix:         "poll:",
		KeyLayout:         LayoutSingle,
		SessionPrefix:     "session:",
		SessionResync:     DefaultSessionResync,
		LeaseTTL:          30 * time.Second,
		RenewInterval:     10 * time.Second,
		HeartbeatInterval: 10 * time.Second,
		HeartbeatTTL:      30 * time.Second,
		DiscoveryInterval: 10 * time.Second,
		PollInterval:      time.Second,
		OpTimeout:         2 * time.Second,
		DriftBound:        0.01,
		SafetyMargin:      500 * time.Millisecond,
	}
}

// Validity is how long a grant confirmed by a request sent at t0 is believed: until
// t0 + LeaseTTL*(1-DriftBound) - SafetyMargin.
func (c Config) Validity() time.Duration {
	return validity(c.LeaseTTL, c.DriftBound, c.SafetyMargin)
}

// fenceTTL is how long a fencing counter outlives the last grant of its endpoint, so that counters of
// endpoints that are gone do not stay in Redis for ever. Once it has expired the next token is Redis
// TIME in microseconds, which already exceeds every earlier token unless Redis's clock stepped back.
func (c Config) fenceTTL() time.Duration {
	return max(24*time.Hour, 100*c.LeaseTTL)
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
}

// Validate checks every field and the fields against each other. The error names the field at fault
// and the rule it breaks, and wraps ErrInvalidConfig. Fields left for New to default (InstanceID,
// Clock, Logger, Rand, Targets) may be empty.
func (c Config) Validate() error {
	switch {
	case strings.ContainsFunc(c.InstanceID, isSpace):
		return invalid("InstanceID", "(%q) must not contain white space", c.InstanceID)
	case c.KeyPrefix == "":
		return invalid("KeyPrefix", "must not be empty")
	case c.WaitReplicas < 0:
		return invalid("WaitReplicas", "(%d) must not be negative (0 turns WAIT off)", c.WaitReplicas)
	case c.KeyLayout != "" && c.KeyLayout != LayoutSingle && c.KeyLayout != LayoutCluster:
		return invalid("KeyLayout", "(%q) must be %q or %q", c.KeyLayout, LayoutSingle, LayoutCluster)
	case c.KeyLayout == LayoutCluster && strings.ContainsAny(c.KeyPrefix, "{}"):
		return invalid("KeyPrefix", "(%q) must not contain '{' or '}' with KeyLayout %q: the endpoint is the keys' hash tag", c.KeyPrefix, LayoutCluster)
	case c.Targets == nil && c.SessionPrefix == "":
		return invalid("SessionPrefix", "must not be empty when Targets is nil")
	case c.Targets == nil && c.SessionResync < c.DiscoveryInterval:
		return invalid("SessionResync", "(%s) must be at least DiscoveryInterval (%s) when Targets is nil: it is how often every session is read even though none changed (DefaultConfig sets %s)",
			c.SessionResync, c.DiscoveryInterval, DefaultSessionResync)
	case c.LeaseTTL < time.Millisecond:
		return invalid("LeaseTTL", "(%s) must be at least 1ms", c.LeaseTTL)
	case c.RenewInterval <= 0:
		return invalid("RenewInterval", "(%s) must be positive", c.RenewInterval)
	case c.RenewInterval > c.LeaseTTL/2:
		return invalid("RenewInterval", "(%s) must be at most LeaseTTL/2 (%s)", c.RenewInterval, c.LeaseTTL/2)
	case c.HeartbeatInterval <= 0:
		return invalid("HeartbeatInterval", "(%s) must be positive", c.HeartbeatInterval)
	case c.HeartbeatTTL <= c.HeartbeatInterval:
		return invalid("HeartbeatTTL", "(%s) must be more than HeartbeatInterval (%s)", c.HeartbeatTTL, c.HeartbeatInterval)
	case c.DiscoveryInterval <= 0:
		return invalid("DiscoveryInterval", "(%s) must be positive", c.DiscoveryInterval)
	case c.PollInterval <= 0:
		return invalid("PollInterval", "(%s) must be positive", c.PollInterval)
	case c.OpTimeout <= 0:
		return invalid("OpTimeout", "(%s) must be positive", c.OpTimeout)
	case c.OpTimeout >= c.RenewInterval:
		return invalid("OpTimeout", "(%s) must be less than RenewInterval (%s)", c.OpTimeout, c.RenewInterval)
	case !(c.DriftBound >= 0 && c.DriftBound < 0.5):
		return invalid("DriftBound", "(%g) must be in [0, 0.5)", c.DriftBound)
	case c.SafetyMargin < 0:
		return invalid("SafetyMargin", "(%s) must not be negative", c.SafetyMargin)
	case c.Validity() <= c.RenewInterval+c.OpTimeout:
		return invalid("SafetyMargin", "leaves a validity of %s (LeaseTTL*(1-DriftBound)-SafetyMargin), which must exceed RenewInterval+OpTimeout (%s)",
			c.Validity(), c.RenewInterval+c.OpTimeout)
	case c.Poll == nil:
		return invalid("Poll", "must be set")
	}
	return nil
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// NewInstanceID returns "hostname-bootUnixNano-8hex": the host name, the boot time in Unix nanoseconds
// and eight hex digits from r, so a restarted process never reuses the ID of its predecessor.
// White space in hostname is replaced by '_'.
func NewInstanceID(hostname string, boot time.Time, r *rand.Rand) string {
	hostname = strings.Map(func(c rune) rune {
		if isSpace(c) {
			return '_'
		}
		return c
	}, hostname)
	if hostname == "" {
		hostname = "unknown"
	}
	return fmt.Sprintf("%s-%d-%08x", hostname, boot.UnixNano(), r.Uint32())
}
