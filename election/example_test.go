package election_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/election"
)

// exampleConfig is DefaultConfig with short timings so the examples finish quickly.
func exampleConfig(role, id string) election.Config {
	cfg := election.DefaultConfig()
	cfg.Role, cfg.InstanceID = role, id
	cfg.TTL, cfg.RenewInterval, cfg.RetryInterval = 400*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	cfg.OpTimeout, cfg.SafetyMargin, cfg.StartJitter = 50*time.Millisecond, 20*time.Millisecond, 10*time.Millisecond
	return cfg
}

// exampleRedis starts an in-process Redis for the examples; use your own address instead.
func exampleRedis() (*miniredis.Miniredis, redis.UniversalClient) {
	m, err := miniredis.Run()
	if err != nil {
		log.Fatal(err)
	}
	return m, redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
}

// Continuous election: lead while you can, hand off on shutdown.
func ExampleElector() {
	srv, client := exampleRedis()
	defer srv.Close()
	defer client.Close()

	started := make(chan uint64, 1)
	cfg := exampleConfig("cron", "instance-a")
	cfg.OnStartedLeading = func(ctx context.Context, term uint64) {
		started <- term
		<-ctx.Done() // do leader work until the context ends; fence writes with term
	}
	e, err := election.New(election.NewRedisBackend(client, election.RedisOptions{}), cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	<-started
	fmt.Println(e.State(), e.IsLeader(), e.Leader())

	// Graceful stop: cancel the leader context, wait for in-flight work, release, notify standbys.
	if err := e.Stop(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.State(), e.IsLeader())
	// Output:
	// leader true instance-a
	// follower false
}

// One-shot: run a job only if leadership can be had now (e.g. on every instance's cron tick).
func ExampleRunOnce() {
	srv, client := exampleRedis()
	defer srv.Close()
	defer client.Close()
	b := election.NewRedisBackend(client, election.RedisOptions{})
	cfg := exampleConfig("nightly-migration", "instance-a")

	for {
		ran, err := election.RunOnce(context.Background(), b, cfg, func(ctx context.Context, term uint64) error {
			fmt.Println("migrating, fenced by a term:", term > 0)
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
		if ran {
			break
		}
		// Not now: someone else holds the role (or, for a brand-new role, the first TTL has not passed).
		time.Sleep(cfg.RetryInterval)
	}
	// Output:
	// migrating, fenced by a term: true
}

// Leader-only wrapper: the same function may be called everywhere; it runs only on the leader.
func ExampleLeaderOnly() {
	srv, client := exampleRedis()
	defer srv.Close()
	defer client.Close()
	e, err := election.New(election.NewRedisBackend(client, election.RedisOptions{}), exampleConfig("cleanup", "instance-a"))
	if err != nil {
		log.Fatal(err)
	}
	cleanup := election.LeaderOnly(e, func(ctx context.Context, term uint64) error {
		fmt.Println("cleaning up")
		return nil
	})

	err = cleanup(context.Background())
	fmt.Println(errors.Is(err, election.ErrNotLeader))

	if err := e.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer e.Stop(context.Background())
	for ev := range e.Events() {
		if ev.Type == election.Acquired {
			break
		}
	}
	fmt.Println(cleanup(context.Background()))
	// Output:
	// true
	// cleaning up
	// <nil>
}

// Several roles in one process: one elector per role, sharing a backend.
func ExampleNew_severalRoles() {
	srv, client := exampleRedis()
	defer srv.Close()
	defer client.Close()
	b := election.NewRedisBackend(client, election.RedisOptions{Heartbeat: true})

	var electors []*election.Elector
	for _, role := range []string{"scheduler", "janitor"} {
		e, err := election.New(b, exampleConfig(role, "instance-a"))
		if err != nil {
			log.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			log.Fatal(err)
		}
		defer e.Stop(context.Background())
		electors = append(electors, e)
	}
	for _, e := range electors {
		for !e.IsLeader() {
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println(e.Role(), "led by", e.Leader())
	}
	// Output:
	// scheduler led by instance-a
	// janitor led by instance-a
}

// PostgreSQL: advisory lock per role on a dedicated session, visibility table, LISTEN/NOTIFY handoff.
func ExampleNewPostgresBackend() {
	ctx := context.Background()
	b, err := election.NewPostgresBackend(ctx, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", election.PostgresOptions{})
	if err != nil {
		log.Fatal(err) // wraps election.ErrBackendUnavailable when the server cannot be reached
	}
	defer b.Close()
	cfg := election.DefaultConfig()
	cfg.Role = "billing-run"
	e, err := election.New(b, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer e.Stop(ctx)
}
