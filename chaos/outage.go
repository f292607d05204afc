package chaos

import (
	"context"
	"errors"
)

// Outage partitions every live instance from the backend at once; the backend keeps its data. When it
// ends, the fleet must recover without ever double-polling.
type Outage struct{}

// Name implements Fault.
func (Outage) Name() string { return "outage" }

// Apply implements Fault.
func (Outage) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	ids := env.Live()
	a := Applied{Targets: ids, Params: map[string]string{"scope": "all instances"}}
	var links []Link
	for _, id := range ids {
		l, err := env.Link(id)
		if err != nil {
			return nil, a, err
		}
		if err := l.Partition(); err != nil {
			return nil, a, err
		}
		links = append(links, l)
	}
	return func(context.Context) error {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Heal())
		}
		return errors.Join(errs...)
	}, a, nil
}
