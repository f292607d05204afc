package chaos

import (
	"context"
	"fmt"
)

// persistentBackend returns the env's backend when it keeps its data on disk with mode (as a Redis
// with RDB snapshots or an AOF does), or an error that says which backend the fault needs.
func persistentBackend(env Env, fault, mode string) (Backend, error) {
	d := env.Backend()
	if d == nil || d.About().Persistence != mode {
		return nil, fmt.Errorf("%w: %s needs a Redis with %s persistence: use --redis server:%s", ErrUnsupported, fault, mode, mode)
	}
	return d, nil
}

// RedisRestartFromSnapshot snapshots the backend (SAVE) when the step starts, lets it run on, and when
// the step ends kills it (kill -9) and restarts it loading that older snapshot: a Redis with RDB
// persistence that crashed between two snapshots. Everything written after the SAVE is lost; keys
// without a TTL (fencing counters, epochs, sessions) come back as they were at the SAVE, and a lease
// the snapshot holds comes back only if its TTL has not run out by the restart. The fault is recorded
// as a wipe: with a step longer than the lease TTL, as the scenarios use, every lease key is gone after
// the restart, exactly as after an empty restart, while the older non-lease keys return. Sessions come
// from the snapshot, as they would for an application whose data lives in that Redis; they are not
// written again.
type RedisRestartFromSnapshot struct{}

// Name implements Fault.
func (RedisRestartFromSnapshot) Name() string { return "redis-restart-from-snapshot" }

// Apply implements Fault.
func (f RedisRestartFromSnapshot) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	a := Applied{Wipes: true, Params: map[string]string{"data": "rolled back to the snapshot taken when the fault began"}}
	pb, err := persistentBackend(env, f.Name(), "rdb")
	if err != nil {
		return nil, a, err
	}
	if err := pb.Save(ctx); err != nil {
		return nil, a, err
	}
	return func(ctx context.Context) error { return pb.Reload(ctx) }, a, nil
}

// RedisRestartAOF kills the backend (kill -9) and restarts it at once loading its append-only file
// (appendfsync everysec): a Redis with AOF persistence that crashed. A process crash loses only what
// Redis had not yet written to the file, which is not a wipe: the fault is not recorded as one.
type RedisRestartAOF struct{}

// Name implements Fault.
func (RedisRestartAOF) Name() string { return "redis-restart-aof" }

// Apply implements Fault.
func (f RedisRestartAOF) Apply(ctx context.Context, env Env) (func(context.Context) error, Applied, error) {
	a := Applied{Params: map[string]string{"data": "reloaded from the AOF (appendfsync everysec)"}}
	pb, err := persistentBackend(env, f.Name(), "aof")
	if err != nil {
		return nil, a, err
	}
	return nil, a, pb.Reload(ctx)
}
