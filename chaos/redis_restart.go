package chaos

import (
	"context"

	"github.com/tenurelabs/tenure/deploy"
)

// RedisRestart kills the backend's primary and brings it back empty after the step's duration (at
// once when the duration is zero): a Redis without persistence that crashed and restarted. Every lease
// is forgotten while old holders may still be inside their local deadlines. The session owner's data is
// written again when the backend returns, as the application that owns sessions would. On a backend
// with persistence the restart is still empty: its files are removed first (RedisRestartFromSnapshot
// and RedisRestartAOF restart from them). Which node is "the primary", and what starting it again
// means, depends on the deployment (package deploy).
type RedisRestart struct{}

// Name implements Fault.
func (RedisRestart) Name() string { return "redis-restart" }

// Apply implements Fault.
func (RedisRestart) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	a := Applied{Wipes: true, Params: map[string]string{"data": "lost"}}
	_, _, err := onPrimary(ctx, env, "", func(d Backend, p deploy.Serving) (func(context.Context) error, error) {
		if p.Slots != "" {
			// On a cluster only the killed primary's slots lose their data: the checker scopes the
			// wipe to the keys that hash there (parameter "slots", as the shard faults name theirs).
			a.Params["slots"] = p.Slots
		}
		return nil, d.Kill(ctx, p.Node)
	})
	if err != nil {
		return nil, a, err
	}
	return func(ctx context.Context) error {
		if _, err := env.Backend().StartKilled(ctx); err != nil {
			return err
		}
		return env.Sessions().Restore(ctx)
	}, a, nil
}
