package chaos

import "context"

// Outage partitions every live instance from the backend at once; the backend keeps its data. When it
// ends, the fleet must recover without ever double-polling.
type Outage struct{}

// Name implements Fault.
func (Outage) Name() string { return "outage" }

// Apply implements Fault.
func (Outage) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	ids := env.Live()
	a := Applied{Targets: ids, Params: map[string]string{"scope": "all instances"}}
	links, err := linksOf(env, ids)
	if err != nil {
		return nil, a, err
	}
	for _, l := range links {
		if err := l.Partition(); err != nil {
			return healAll(links), a, err
		}
	}
	return healAll(links), a, nil
}
