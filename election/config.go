package election

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenurelabs/tenure/clock"
)

// Config configures an Elector (and RunOnce). Start from DefaultConfig and set Role; New validates.
type Config struct {
	// Role names the lock. One role, one leader. Required.
	Role string
	// InstanceID identifies this elector to the others; it must be unique among the contenders.
	// Empty: New generates hostname-bootUnixNano-8hex from Clock and Rand.
	InstanceID string

	// TTL is how long a holding lasts on the backend without renewal. Default 15s.
	TTL time.Duration
	// RenewInterval is the time between renewals while leading; below TTL/2. Default 5s.
	RenewInterval time.Duration
	// RetryInterval is the time between acquisition attempts while not leading; at most TTL.
	// Default 2s. A release notification (Redis pub/sub, PostgreSQL NOTIFY) cuts the wait short.
	RetryInterval time.Duration
	// StartJitter is the upper bound of a random delay before the first attempt, against a thundering
	// herd of instances started together. 0 disables it. Default 500ms.
	StartJitter time.Duration
	// HandoffTimeout bounds how long Stop waits for in-flight leader work (the OnStartedLeading callback
	// and LeaderOnly functions) before releasing. Default 5s.
	HandoffTimeout time.Duration
	// DriftBound is the largest clock rate error tolerated between this instance and the backend,
	// as a fraction (0.01 = 1%). In [0, 0.5). Default 0.01.
	DriftBound float64
	// SafetyMargin is subtracted from the local deadline on top of the drift allowance, to cover
	// scheduling delay between the deadline and the leader work noticing its cancelled context.
	// Default 200ms.
	SafetyMargin time.Duration
	// OpTimeout bounds each backend call. At most RenewInterval. Default 2s.
	OpTimeout time.Duration

	// Clock is the time source for deadlines, timers and event stamps. Default clock.Real{}.
	Clock clock.Clock
	// Rand drives the start-up jitter, the jitter of retries and renewals (each waits up to a tenth less than
	// its interval, so that electors do not stay in phase) and generated instance IDs; it is used from one goroutine at a
	// time. DefaultConfig seeds one from the clock; pass a seeded one for a replayable run.
	Rand *rand.Rand
	// Logger receives structured events; nil discards them.
	Logger *slog.Logger
	// Registerer receives the Prometheus collectors; nil registers none. Several electors may share one.
	Registerer prometheus.Registerer

	// OnStartedLeading is called in its own goroutine when this elector becomes leader. ctx is cancelled
	// before the local lease deadline, on any renewal failure, on Stop and when Start's context ends; the
	// work must stop when it is. term is the fencing token of this leadership.
	OnStartedLeading func(ctx context.Context, term uint64)
	// OnStoppedLeading is called when a leadership ends, after its context was cancelled. It runs on the
	// elector's goroutine: keep it short.
	OnStoppedLeading func()
	// OnNewLeader is called when the observed leader changes to id (this instance's ID included). It
	// runs on the elector's goroutine: keep it short.
	OnNewLeader func(id string)
	// OnValidUntil is called with the local deadline of the leadership with term (on Clock: the moment
	// the leader context is cancelled unless a renewal is confirmed first) when it is acquired, before
	// OnStartedLeading, and each time a confirmed renewal moves it. It is not called once the leader
	// context has been cancelled, though a call may race with a cancellation from outside (Stop, the end
	// of Start's context): order it against the leader context's end where that matters. It runs on the
	// elector's goroutines: keep it short.
	OnValidUntil func(term uint64, until time.Time)

	// variant is which of the safety mechanisms the elector runs without: none (mechanisms.go).
	variant variant

	_ struct{}
}

// DefaultConfig returns the defaults documented on each field. Role is left empty.
func DefaultConfig() Config {
	return Config{
		TTL:            15 * time.Second,
		RenewInterval:  5 * time.Second,
		RetryInterval:  2 * time.Second,
		StartJitter:    500 * time.Millisecond,
		HandoffTimeout: 5 * time.Second,
		DriftBound:     0.01,
		SafetyMargin:   200 * time.Millisecond,
		OpTimeout:      2 * time.Second,
		Clock:          clock.Real{},
		Rand:           rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))),
	}
}

// Validate checks every field and the rules between them; the error wraps ErrInvalidConfig and names the
// field and the rule broken.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Role == "":
		return bad("Role must not be empty")
	case c.TTL <= 0:
		return bad("TTL (%s) must be positive", c.TTL)
	case c.RenewInterval <= 0:
		return bad("RenewInterval (%s) must be positive", c.RenewInterval)
	case c.TTL <= c.RenewInterval:
		return bad("TTL (%s) must be greater than RenewInterval (%s)", c.TTL, c.RenewInterval)
	case c.RenewInterval >= c.TTL/2:
		return bad("RenewInterval (%s) must be less than TTL/2 (%s)", c.RenewInterval, c.TTL/2)
	case c.RetryInterval <= 0:
		return bad("RetryInterval (%s) must be positive", c.RetryInterval)
	case c.RetryInterval > c.TTL:
		return bad("RetryInterval (%s) must not exceed TTL (%s)", c.RetryInterval, c.TTL)
	case c.StartJitter < 0:
		return bad("StartJitter (%s) must not be negative", c.StartJitter)
	case c.HandoffTimeout < 0:
		return bad("HandoffTimeout (%s) must not be negative", c.HandoffTimeout)
	case c.DriftBound < 0 || c.DriftBound >= 0.5:
		return bad("DriftBound (%g) must be in [0, 0.5)", c.DriftBound)
	case c.SafetyMargin < 0:
		return bad("SafetyMargin (%s) must not be negative", c.SafetyMargin)
	case c.OpTimeout <= 0:
		return bad("OpTimeout (%s) must be positive", c.OpTimeout)
	case c.OpTimeout > c.RenewInterval:
		return bad("OpTimeout (%s) must not exceed RenewInterval (%s)", c.OpTimeout, c.RenewInterval)
	case c.validity() <= c.RenewInterval+c.OpTimeout:
		return bad("TTL*(1-DriftBound)-SafetyMargin (%s) must exceed RenewInterval+OpTimeout (%s), or a renewal sent on time could not be confirmed before the local deadline",
			c.validity(), c.RenewInterval+c.OpTimeout)
	case c.Clock == nil:
		return bad("Clock must not be nil (start from DefaultConfig)")
	case c.Rand == nil:
		return bad("Rand must not be nil (start from DefaultConfig)")
	}
	return nil
}

// validity is how long after sending a successful acquire or renewal the holder may act: the TTL shrunk
// by the drift allowance and the safety margin.
func (c Config) validity() time.Duration {
	return time.Duration(float64(c.TTL)*(1-c.DriftBound)) - c.SafetyMargin
}

// deadline is the local deadline of a holding confirmed by a request sent at sent (on c.Clock).
func (c Config) deadline(sent time.Time) time.Time { return sent.Add(c.validity()) }

// withDefaults fills the optional fields New and RunOnce may fill: InstanceID and Logger.
func (c Config) withDefaults() Config {
	if c.InstanceID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		c.InstanceID = fmt.Sprintf("%s-%d-%08x", host, c.Clock.Now().UnixNano(), c.Rand.Uint32())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
