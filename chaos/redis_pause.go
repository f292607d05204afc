package chaos

import "context"

// RedisPause freezes the backend process (SIGSTOP) for the step's duration: connections stay open and
// nothing is answered; then it resumes (SIGCONT) with its data, and every queued command runs late.
type RedisPause struct{}

// Name implements Fault.
func (RedisPause) Name() string { return "redis-pause" }

// Apply implements Fault.
func (RedisPause) Apply(_ context.Context, env Env) (func(context.Context) error, Applied, error) {
	if err := env.Backend().Pause(); err != nil {
		return nil, Applied{}, err
	}
	return func(context.Context) error { return env.Backend().Resume() }, Applied{}, nil
}
