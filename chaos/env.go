// Package chaos holds the faults Tenure injects and the seeded schedules that order them.
//
// A Fault acts on an Env, which the simulator implements: its instances, their links to the backend
// (toxiproxy proxies, see Link), their clocks, the Redis deployment (a deploy.Deployment) and the poll
// targets. Each fault type
// lives in a file of its own. A Schedule is data — a list of Steps at spec times — so the same seed always
// yields the same schedule, which is printed and saved with every run.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenurelabs/tenure/deploy"
)

// ErrUnsupported is returned by a fault the backend or environment cannot carry out (pausing an
// external Redis, for example). The run fails with a setup error rather than pretending. It is
// deploy.ErrUnsupported, which a deployment's refusals wrap.
var ErrUnsupported = deploy.ErrUnsupported

// ErrNoTarget is returned when a fault names an instance slot that is not live at that moment.
var ErrNoTarget = errors.New("chaos: no live instance in that slot")

// Env is what faults act on. Instance IDs name instances; slots (0-based, in start order among the
// live instances) are how schedules name them, so a schedule does not depend on generated IDs.
type Env interface {
	// Live returns the live instances' IDs in start order.
	Live() []string
	// Crash kills an instance: its link is cut, its work stops, it releases nothing.
	Crash(id string) error
	// Stop shuts an instance down gracefully.
	Stop(ctx context.Context, id string) error
	// StartInstance adds a new instance to the fleet and returns its ID.
	StartInstance(ctx context.Context) (string, error)
	// Freeze stops an instance as SIGSTOP would (see Pause), from its next poll on: its clock stops and
	// no timer of it fires, its backend calls and polls block where they stand. Thaw lets it carry on.
	Freeze(id string) error
	Thaw(id string) error
	// SetClockRate makes an instance's clock run at rate times real time.
	SetClockRate(id string, rate float64) error
	// Link returns the instance's link to the backend.
	Link(id string) (Link, error)
	// Backend returns the Redis deployment.
	Backend() Backend
	// Sessions returns the poll targets' controls.
	Sessions() Sessions
	// Holder returns the live instance that last reported holding endpoint (or leading the role).
	Holder(endpoint string) (string, bool)
}

// Backend is the Redis deployment faults hurt: its verbs (kill, pause, start again, reload, promote,
// migrate, peer links) and what each means for each deployment are in package deploy.
type Backend = deploy.Deployment

// LeaseKeys is an optional capability of an Env: the key in which the system under test keeps an
// endpoint's lease, so that a fault aimed at "the shard serving ep-0" hits the shard that holds it
// whatever the system names its keys. Without it, or before the system wrote one, the key is the
// endpoint's hash tag ("{ep-0}"), where the reference's cluster layout keeps it.
type LeaseKeys interface {
	LeaseKey(endpoint string) string
}

// leaseKey is the key of endpoint's lease (see LeaseKeys).
func leaseKey(env Env, endpoint string) string {
	if lk, ok := env.(LeaseKeys); ok {
		if k := lk.LeaseKey(endpoint); k != "" {
			return k
		}
	}
	return "{" + endpoint + "}"
}

// onPrimary is the shape of every fault that hurts a primary: it resolves the data node that serves key
// as a primary now ("" for the deployment's own primary; see deploy.Deployment.Primary) and does act to
// it. The end act returns is returned even when act fails, so that what it started is undone.
func onPrimary(ctx context.Context, env Env, key string, act func(d Backend, p deploy.Serving) (end func(context.Context) error, err error)) (func(context.Context) error, deploy.Serving, error) {
	d := env.Backend()
	p, err := d.Primary(ctx, key)
	if err != nil {
		return nil, p, err
	}
	end, err := act(d, p)
	return end, p, err
}

// Sessions controls the poll targets. IDs are endpoint IDs.
type Sessions interface {
	Add(ctx context.Context, id string) error
	Pause(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	// Restore writes every current session again (after the backend lost its data).
	Restore(ctx context.Context) error
	// IDs lists the current sessions, in creation order.
	IDs() []string
}

// Applied describes a fault as it was carried out, for the history.
type Applied struct {
	// Targets are the instance IDs affected; empty for backend-wide faults.
	Targets []string
	// Params describe the fault for the reader.
	Params map[string]string
	// Wipes is set when the backend's data was erased.
	Wipes bool
	// Removes is set when the targets left the fleet for good.
	Removes bool
}

// Fault is one kind of fault. Apply injects it and returns the function that ends it (nil for an
// instantaneous fault such as a crash). Implementations must be safe to call with a cancelled context on
// the way out: the scheduler ends every open fault when a run stops.
type Fault interface {
	// Name is the fault type's name in schedules and reports.
	Name() string
	// Apply injects the fault now.
	Apply(ctx context.Context, env Env) (end func(context.Context) error, applied Applied, err error)
}

// ErrNoHolder is returned when a fault targets the holder of an endpoint that nobody holds.
var ErrNoHolder = errors.New("chaos: nobody holds that endpoint")

// target resolves a fault's target: the holder of endpoint of when set, else the instance in slot.
func target(env Env, slot int, of string) (string, error) {
	if of != "" {
		id, ok := env.Holder(of)
		if !ok {
			return "", fmt.Errorf("%w: %s", ErrNoHolder, of)
		}
		return id, nil
	}
	return slotID(env, slot)
}

// targetOr is target, falling back on slot when or is set and nobody holds of.
func targetOr(env Env, slot int, of string, or bool) (string, error) {
	id, err := target(env, slot, of)
	if or && errors.Is(err, ErrNoHolder) {
		return slotID(env, slot)
	}
	return id, err
}

// targetLinkOr is targetLink with targetOr's fallback.
func targetLinkOr(env Env, slot int, of string, or bool) (string, Link, error) {
	id, err := targetOr(env, slot, of, or)
	if err != nil {
		return "", nil, err
	}
	l, err := env.Link(id)
	if err != nil {
		return "", nil, err
	}
	return id, l, nil
}

// targetLink resolves a fault's target and its link.
func targetLink(env Env, slot int, of string) (string, Link, error) {
	id, err := target(env, slot, of)
	if err != nil {
		return "", nil, err
	}
	l, err := env.Link(id)
	if err != nil {
		return "", nil, err
	}
	return id, l, nil
}

// linksOf returns the links of ids.
func linksOf(env Env, ids []string) ([]Link, error) {
	links := make([]Link, 0, len(ids))
	for _, id := range ids {
		l, err := env.Link(id)
		if err != nil {
			return links, err
		}
		links = append(links, l)
	}
	return links, nil
}

// healAll returns the end function of a fault on several links.
func healAll(links []Link) func(context.Context) error {
	return func(context.Context) error {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Heal())
		}
		return errors.Join(errs...)
	}
}

// slotID resolves a slot to a live instance ID.
func slotID(env Env, slot int) (string, error) {
	live := env.Live()
	if slot < 0 || slot >= len(live) {
		return "", ErrNoTarget
	}
	return live[slot], nil
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
