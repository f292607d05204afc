package chaos

import (
	"context"

	"github.com/tenurelabs/tenure/deploy"
)

// RedisPause freezes the backend's primary (SIGSTOP) for the step's duration: connections stay open and
// nothing is answered; then it resumes (SIGCONT) with its data, and every queued command runs late.
type RedisPause struct{}

// Name implements Fault.
func (RedisPause) Name() string { return "redis-pause" }

// Apply implements Fault.
func (RedisPause) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	end, _, err := onPrimary(ctx, env, "", func(d Backend, p deploy.Serving) (func(context.Context) error, error) {
		resume, err := d.Pause(ctx, p.Node)
		if err != nil {
			return nil, err
		}
		return func(context.Context) error { return resume() }, nil
	})
	return end, Applied{}, err
}
