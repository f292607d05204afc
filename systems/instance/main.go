package instance

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/clock"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
	// The reference systems register themselves: reference, election-redis.
	_ "github.com/tenurelabs/tenure/systems/reference"
)

// Exit statuses of Main.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the system failed to start or to stop
	ExitBadInput = 2 // bad flags or environment
)

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

// Main runs one instance of a registered in-process system (--system, default reference for a lease
// run and election-redis for an election) under the process protocol, reading the protocol's
// environment through getenv; stdin's end (the harness is gone) ends it at once, SIGTERM stops it
// gracefully.
func Main(args []string, getenv func(string) string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("tenure-instance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("system", "", "the system to run: reference, election-redis (default: reference for TENURE_KIND=lease, election-redis for election)")
	if err := fs.Parse(args); err != nil {
		return ExitBadInput
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "tenure-instance: "+format+"\n", a...)
		return code
	}
	env, err := ReadEnv(getenv)
	if err != nil {
		return fail(ExitBadInput, "%v", err)
	}
	if *name == "" {
		*name = map[string]string{"lease": "reference", "election": "election-redis"}[env.Kind]
	}
	sys, err := sim.Lookup(*name)
	if err != nil {
		return fail(ExitBadInput, "%v", err)
	}
	if k := kindOf(sys); k != env.Kind {
		return fail(ExitBadInput, "system %s is a %s system, and TENURE_KIND says the harness runs %s scenarios", *name, k, env.Kind)
	}
	redis.SetLogger(quietLogger{})
	opts := func(addr string) *redis.Options {
		t := env.Timing.OpTimeout
		// As the harness's in-process instances are configured (sim's instanceLink): go-redis re-sends
		// after a lost reply, which is one of the faults a lease must survive.
		return &redis.Options{Addr: addr, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, ContextTimeoutEnabled: true,
			PoolSize: 8, MaxRetries: 3}
	}
	client := redis.NewClient(opts(env.RedisAddr))
	defer client.Close()
	var nodes []redis.UniversalClient
	if len(env.RedisNodes) > 1 {
		for _, a := range env.RedisNodes {
			c := redis.NewClient(opts(a))
			defer c.Close()
			nodes = append(nodes, c)
		}
	}
	harness := NewHarness(env.HarnessURL)
	real := clock.Real{}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var beliefErr sync.Once
	cfg := sim.InstanceConfig{
		ID: env.ID, Seed: env.Seed, Client: client, Nodes: nodes, Clock: real, Timing: env.Timing,
		KeyPrefix: env.KeyPrefix, SessionPrefix: env.SessionPrefix, Targets: env.Targets, Logger: logger,
		Poll: harness.Poll,
		Observe: func(endpoint string, b history.Belief) {
			// In order, before the instance acts on it: a belief reported late would look shorter.
			if err := harness.Belief(context.Background(), endpoint, b, real.Now()); err != nil {
				beliefErr.Do(func() { logger.Error("report a belief", "endpoint", endpoint, "err", err) })
			}
		},
	}
	inst, err := sys.NewInstance(cfg)
	if err != nil {
		return fail(ExitBadInput, "%v", err)
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(gone)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- inst.Start(ctx) }()
	stop := func() int {
		sctx, scancel := context.WithTimeout(context.Background(), env.StopTimeout)
		defer scancel()
		err := inst.Stop(sctx)
		cancel()
		if err != nil {
			return fail(ExitFailed, "stop: %v", err)
		}
		return ExitOK
	}
	select {
	case err := <-started:
		if err != nil {
			return fail(ExitFailed, "start: %v", err)
		}
	case <-sigs:
		return stop()
	case <-gone:
		return ExitOK // the harness is gone: a crash, releasing nothing
	}
	rctx, rcancel := context.WithTimeout(ctx, max(env.ReadyTimeout, time.Second))
	err = harness.Ready(rctx)
	rcancel()
	if err != nil {
		return fail(ExitFailed, "%v", err)
	}
	select {
	case <-sigs:
		return stop()
	case <-gone:
		return ExitOK
	}
}

func kindOf(s sim.System) string {
	if k, ok := s.(sim.KindReporter); ok {
		return k.Kind()
	}
	return "lease"
}
