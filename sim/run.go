package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// Options configure one run.
type Options struct {
	// System is the implementation under test.
	System System
	// Scenario is what to run.
	Scenario Scenario
	// Suite names the suite the run belongs to, for the record.
	Suite string
	// Seed drives every random choice: the nemesis schedule, the jitter of fault times and instance
	// starts, instance ID suffixes, latency jitter.
	Seed int64
	// TimeScale multiplies every spec duration; 0.1 runs ten times faster. Must be positive.
	TimeScale float64
	// Backend names the Redis to use (see OpenBackend); "" means auto.
	Backend string
	// Toxiproxy is the URL of an external toxiproxy-server; "" runs toxiproxy in this process.
	Toxiproxy string
	// Postgres is the PostgreSQL connection string for systems that use it; "" means $TENURE_PG_URL or
	// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. The run creates one table of its own there
	// and drops it at the end.
	Postgres string
	// Instances and Endpoints override the scenario's fleet size and target count when positive.
	Instances int
	Endpoints int
	// Command is the command line that reproduces the run, for the record.
	Command string
	// Log receives the instances' structured logs (JSON lines); nil discards them.
	Log io.Writer
	// Progress, when set, is called about twice a second until the run ends, and once as it ends.
	Progress func(Progress)
	_        struct{}
}

// Progress is a snapshot of a run in flight.
type Progress struct {
	Elapsed, Total time.Duration
	Live           int
	Events         int
	Last           string // the last fault applied
}

// Result is what a run produced.
type Result struct {
	// History is the full record; on interruption it is partial and Meta.Interrupted is set.
	History history.History
	// Schedule is the fault schedule at run time (scaled).
	Schedule chaos.Schedule
	// FaultErrors lists faults that could not be applied or ended. Such a run did not go as written; the
	// history records the error with the fault and the checker's verdict is unknown.
	FaultErrors []string
	// CleanupErrors lists what could not be cleaned up after a completed run (a server that would not
	// stop, a table that would not drop). The history is still valid.
	CleanupErrors []string
}

// ErrOptions is wrapped by every error about impossible options; nothing has started when it is
// returned.
var ErrOptions = errors.New("sim: invalid options")

// MaxInstances bounds a fleet: each instance needs a proxy port and connections.
const MaxInstances = 500

// Plan resolves the options into the scaled schedule and timing without starting anything, so a caller
// can print or validate it. The same options always give the same plan: the per-seed jitter of the
// fault times is in the schedule it returns.
func Plan(o Options) (chaos.Schedule, Timing, error) {
	p, err := plan(o)
	return p.schedule, p.timing, err
}

// planned is a run resolved from its options, at run time scale.
type planned struct {
	schedule chaos.Schedule
	timing   Timing
	// starts is each initial instance's start delay.
	starts []time.Duration
	// steady are the scenario's steady windows, moved with the jitter of the steps before them.
	steady []history.Window
}

// jitterSalt separates the jitter's random stream from the nemesis's, so that adding jitter left the
// nemesis schedules of existing seeds as they were.
const jitterSalt = 0x6a09e667f3bcc908

func plan(o Options) (planned, error) {
	var p planned
	if o.System == nil {
		return p, fmt.Errorf("%w: no system under test", ErrOptions)
	}
	if o.TimeScale <= 0 {
		return p, fmt.Errorf("%w: time scale must be > 0 (got %g); 1 is spec time, 0.1 ten times faster", ErrOptions, o.TimeScale)
	}
	sc := o.effectiveScenario()
	if sc.Instances > MaxInstances {
		return p, fmt.Errorf("%w: %d instances is more than the %d the harness supports", ErrOptions, sc.Instances, MaxInstances)
	}
	if err := sc.Validate(); err != nil {
		return p, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	spec := sc.Timing.merged(SpecTiming())
	timing := spec.scaled(o.TimeScale)

	jrng := rand.New(rand.NewSource(o.Seed ^ jitterSalt))
	def := sc.FaultJitter
	if def == 0 {
		def = chaos.DefaultJitter
	}
	steps, shifts := chaos.Schedule(sc.Steps).Jittered(jrng, def, sc.Duration)
	startBound := sc.StartJitter
	if startBound == 0 {
		startBound = spec.PollInterval
	}
	starts := make([]time.Duration, sc.Instances)
	for i := range starts {
		if startBound > 0 {
			starts[i] = time.Duration(float64(time.Duration(jrng.Int63n(int64(startBound/time.Millisecond)+1))*time.Millisecond) * o.TimeScale)
		}
	}
	if sc.Nemesis != nil {
		n := *sc.Nemesis
		n.Instances = sc.Instances
		rng := rand.New(rand.NewSource(o.Seed))
		more, err := chaos.Nemesis(rng, n)
		if err != nil {
			return p, fmt.Errorf("%w: %v", ErrOptions, err)
		}
		steps = append(steps, more...)
	}
	sessions := make([]string, sc.Endpoints)
	for i := range sessions {
		sessions[i] = endpointName(i)
	}
	if err := chaos.Validate(steps, sc.Instances, sessions); err != nil {
		return p, fmt.Errorf("%w: scenario %s: %v", ErrOptions, sc.Name, err)
	}
	need, err := TopologyNeed(o.System, sc.Topology)
	if err != nil {
		return p, fmt.Errorf("%w: scenario %s: %v", ErrOptions, sc.Name, err)
	}
	backendSpec, err := BackendForScenario(o.Backend, need, steps)
	if err != nil {
		return p, fmt.Errorf("%w: scenario %s: %v", ErrOptions, sc.Name, err)
	}
	if err := CheckBackendSpec(backendSpec); err != nil {
		return p, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	if kill, pause := needsControl(steps); kill || pause {
		if why := lacksControl(backendSpec, pause); why != "" {
			return p, fmt.Errorf("%w: scenario %s needs to kill or pause Redis, which %s; use --redis server", chaos.ErrUnsupported, sc.Name, why)
		}
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * o.TimeScale) }
	steady := make([]history.Window, len(sc.Steady))
	for i, w := range sc.Steady {
		// A steady window waits for every step written before it to have moved.
		var shift time.Duration
		for j, st := range sc.Steps {
			if st.At < w.From {
				shift = max(shift, shifts[j])
			}
		}
		from := min(w.From+shift, w.From+(w.To-w.From)/2)
		steady[i] = history.Window{From: scale(from), To: scale(w.To)}
	}
	return planned{schedule: steps.Scale(o.TimeScale), timing: timing, starts: starts, steady: steady}, nil
}

func (o Options) effectiveScenario() Scenario {
	sc := o.Scenario
	if o.Instances > 0 {
		sc.Instances = o.Instances
	}
	if o.Endpoints > 0 {
		sc.Endpoints = o.Endpoints
	}
	return sc
}

// needsControl reports which backend controls a schedule uses.
func needsControl(s chaos.Schedule) (kill, pause bool) {
	for _, st := range s {
		switch st.Fault.(type) {
		case chaos.RedisRestart, chaos.RedisRestartFromSnapshot, chaos.RedisRestartAOF:
			kill = true
		case chaos.RedisPause:
			pause = true
		}
	}
	return
}

// lacksControl says why the backend named by spec cannot carry out a schedule that kills (and, when
// pause is set, pauses) Redis, or "" when it can.
func lacksControl(spec string, pause bool) string {
	if spec == "" || spec == "auto" {
		if _, ok := redisserver.Available(); ok {
			return ""
		}
		spec = "embedded"
	}
	switch {
	case spec == "server" || strings.HasPrefix(spec, "server:") || spec == TopologySentinel || spec == TopologyIndependent:
		return ""
	case spec == "embedded" && pause:
		return "the embedded Redis (chosen because no redis-server is installed, or asked for) cannot pause"
	case spec == "embedded":
		return ""
	case spec == "container":
		return "the container backend does not do"
	}
	return "an external Redis is not the harness's to do"
}

// Run executes one scenario against a fresh backend and returns its history. Setup errors (bad options,
// no backend) are returned before anything is left running. When ctx is cancelled the run stops early,
// every fault is ended, every instance and process stopped, and the partial history returned with
// Meta.Interrupted set.
func Run(ctx context.Context, o Options) (res Result, err error) {
	p, err := plan(o)
	if err != nil {
		return res, err
	}
	schedule, timing := p.schedule, p.timing
	res.Schedule = schedule
	sc := o.effectiveScenario()

	need, err := TopologyNeed(o.System, sc.Topology)
	if err != nil {
		return res, err
	}
	spec, err := BackendForScenario(o.Backend, need, schedule)
	if err != nil {
		return res, err
	}
	backend, err := OpenBackendWith(ctx, spec, BackendOptions{TimeScale: o.TimeScale, Seed: o.Seed})
	if err != nil {
		return res, err
	}
	// cleanup reports an error of the clean-up after a run: into err while setting up (nothing usable
	// was produced), into res.CleanupErrors once a history exists.
	cleanup := func(cerr error) {
		if cerr == nil {
			return
		}
		if len(res.History.Events) > 0 {
			res.CleanupErrors = append(res.CleanupErrors, cerr.Error())
			return
		}
		err = errors.Join(err, cerr)
	}
	defer func() { cleanup(backend.Close()) }()

	var proxies chaos.Proxies
	if o.Toxiproxy != "" {
		r, err := chaos.NewRemote(o.Toxiproxy)
		if err != nil {
			return res, err
		}
		proxies = r
	} else {
		proxies = chaos.NewEmbedded(o.Seed)
	}
	defer func() { cleanup(proxies.Close()) }()

	rng := rand.New(rand.NewSource(o.Seed))
	// The run's name for what it creates on shared servers (key namespace, PostgreSQL table). It must be
	// unique among runs that may share a server at the same time, so it is not drawn from the seed: two
	// runs with one seed would collide. It influences no behaviour.
	runID := uniqueRunID(sc.Name, o.Seed)
	ns := ""
	if backend.Shared() {
		ns = "tenure-" + runID + ":"
	}
	admin, owned := adminClient(backend)
	if owned {
		defer admin.Close()
	}
	if err := admin.Ping(ctx).Err(); err != nil {
		return res, fmt.Errorf("sim: backend %s does not answer: %w", backend.Describe(), err)
	}
	if !backend.Shared() {
		if n, err := admin.DBSize(ctx).Result(); err != nil || n != 0 {
			return res, fmt.Errorf("sim: backend %s is not empty at start (%d keys, %v): the run's assumptions do not hold", backend.Describe(), n, err)
		}
	}

	start := time.Now()
	rec := history.NewRecorderFrom(start)
	defer watchBackend(ctx, backend, rec)()
	logger := slog.New(newOnceKeys(slog.NewJSONHandler(discardIfNil(o.Log), &slog.HandlerOptions{Level: slog.LevelInfo})))
	r := &runner{
		o: o, sc: sc, timing: timing, rec: rec, rng: rng, backend: backend, proxies: proxies,
		keyPrefix: ns + "poll:", sessions: newSessionStore(admin, ns+"session:", rec),
		svc: newEndpointService(rec, sc.Fencing, timing.PollDuration), logger: logger,
	}
	if c, ok := o.System.(OpClassifier); ok {
		r.classifier = c
	}
	if o.Toxiproxy != "" {
		r.linkPrefix = "tenure-" + runID + "-" // proxy names must not collide on a shared server
	}
	kind := "lease"
	if k, ok := o.System.(KindReporter); ok {
		kind = k.Kind()
	}
	if pu, ok := o.System.(PostgresUser); ok && pu.UsesPostgres() {
		pg, perr := openPostgres(ctx, o.Postgres, runID)
		if perr != nil {
			return res, perr
		}
		defer func() { cleanup(pg.close()) }()
		r.pg = pg
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.crashAll()
		if backend.Shared() {
			cleanup(errors.Join(r.sessions.deleteAll(cctx), deleteNamespace(cctx, admin, ns)))
		}
	}()

	for i := 0; i < sc.Endpoints; i++ {
		if err := r.sessions.Add(ctx, endpointName(i)); err != nil && ctx.Err() == nil {
			return res, err
		}
	}
	// The fleet starts together, as after a deploy: the thundering herd is part of every scenario. Each
	// instance starts after its own seeded delay (within the scenario's StartJitter), so that their
	// poll and renewal cycles fall at other phases on each seed.
	var wg sync.WaitGroup
	errs := make([]error, sc.Instances)
	for i := 0; i < sc.Instances; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if !sleepCtx(ctx, p.starts[i]) {
				errs[i] = ctx.Err()
				return
			}
			_, errs[i] = r.StartInstance(ctx)
		}(i)
	}
	wg.Wait()
	// Interrupted while starting: not a setup error, a partial run like any other.
	if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
		return res, fmt.Errorf("sim: start fleet: %w", err)
	}

	total := time.Duration(float64(sc.Duration) * o.TimeScale)
	runCtx, cancelRun := context.WithTimeout(ctx, total-rec.Now())
	defer cancelRun()
	var faultErrs []string
	var lastFault string
	var mu sync.Mutex
	runner := chaos.Runner{
		Env:   r,
		Now:   rec.Now,
		Sleep: sleepCtx,
		OnApply: func(fr chaos.Record) {
			mu.Lock()
			lastFault = fr.Name
			mu.Unlock()
		},
		OnEnd: func(fr chaos.Record) {
			if fr.Err != nil {
				mu.Lock()
				faultErrs = append(faultErrs, fmt.Sprintf("%s %s: %v", fr.ID, fr.Name, fr.Err))
				mu.Unlock()
			}
			if !fr.IsFault {
				return
			}
			hf := &history.Fault{ID: fr.ID, Name: fr.Name, Targets: fr.Applied.Targets, Params: fr.Applied.Params,
				Wipes: fr.Applied.Wipes, Removes: fr.Applied.Removes}
			if ib, ok := backend.(*independentBackend); ok && hf.Wipes {
				hf.WipedNode = ib.t.Nodes()[0].Name
			}
			if fr.Err != nil {
				hf.Err = fr.Err.Error()
			}
			rec.Add(history.Event{Kind: history.KindFault, At: fr.Start, End: fr.End, Fault: hf})
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runner.Run(runCtx, schedule)
	}()
	// Stay until the end of the run even if the schedule finished early (or had no step at all); the
	// progress line goes on to the end, and its last call is at the end.
	if o.Progress != nil {
		progress := func() {
			mu.Lock()
			lf := lastFault
			mu.Unlock()
			o.Progress(Progress{Elapsed: rec.Now(), Total: total, Live: len(r.Live()), Events: rec.Len(), Last: lf})
		}
		t := time.NewTicker(500 * time.Millisecond)
		for runCtx.Err() == nil {
			select {
			case <-runCtx.Done():
			case <-t.C:
				progress()
			}
		}
		t.Stop()
		<-done
		progress()
	}
	<-done
	<-runCtx.Done()
	end := rec.Now()
	interrupted := ctx.Err() != nil

	r.crashAll()
	events := rec.Events()
	kept := events[:0]
	for _, e := range events {
		if e.At <= end {
			kept = append(kept, e)
		}
	}
	res.FaultErrors = faultErrs
	steady := p.steady
	res.History = history.History{
		Meta: history.Meta{
			Schema: history.SchemaVersion, Scenario: sc.Name, Suite: o.Suite, System: o.System.Name(), Kind: kind,
			Backend: backend.Describe(), Seed: o.Seed, TimeScale: o.TimeScale,
			Instances: sc.Instances, Endpoints: sc.Endpoints, LeaseTTL: timing.LeaseTTL,
			FailoverBound: failoverBound(sc, timing, o.TimeScale), HandoffBound: time.Duration(float64(sc.HandoffBound) * o.TimeScale),
			PollInterval: timing.PollInterval, DiscoveryInterval: timing.DiscoveryInterval, Fencing: sc.Fencing,
			Steady: steady, ExpectBalance: sc.ExpectBalance, Duration: end, StartedAt: start.UTC(),
			Command: o.Command, Interrupted: interrupted, Expect: sc.Expect,
			Assumptions: assumptions(sc, timing, backend, schedule), Counted: rec.Counted(),
		},
		Events: kept,
	}
	return res, nil
}

// PersistenceReporter is an optional capability of a Backend: what it keeps across a restart ("none",
// "rdb" or "aof"). A backend without it keeps nothing.
type PersistenceReporter interface {
	Persistence() string
}

// assumptions states what the system under test relies on in this run, and which of the run's faults
// lie outside that: those the scenario names, every pause (a process frozen between its validity check
// and its action can only be refused by fencing), and a clock drift whose rate error exceeds the bound.
func assumptions(sc Scenario, t Timing, backend Backend, s chaos.Schedule) history.Assumptions {
	a := history.Assumptions{DriftBound: t.DriftBound, Persistence: "none", Topology: "single"}
	if pr, ok := backend.(PersistenceReporter); ok && pr.Persistence() != "" {
		a.Persistence = pr.Persistence()
	}
	if tb, ok := backend.(TopologyBackend); ok {
		a.Topology = tb.Kind()
	}
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			a.Outside = append(a.Outside, name)
		}
	}
	for _, n := range sc.Outside {
		add(n)
	}
	for _, st := range s {
		switch f := st.Fault.(type) {
		case chaos.Pause:
			add(f.Name())
		case chaos.Drift:
			// A rate written at the bound (1.01 for 1%) is inside it, whatever the float rounding says.
			if math.Abs(f.Rate-1) > t.DriftBound+1e-9 {
				add(f.Name())
			}
		}
	}
	return a
}

// uniqueRunID names a run's private objects on shared servers.
func uniqueRunID(scenario string, seed int64) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d/%d/%d/%d", scenario, seed, os.Getpid(), time.Now().UnixNano(), runCounter.Add(1))
	return fmt.Sprintf("%08x", h.Sum32())
}

var runCounter atomic.Int64

func failoverBound(sc Scenario, t Timing, scale float64) time.Duration {
	if sc.FailoverBound > 0 {
		return time.Duration(float64(sc.FailoverBound) * scale)
	}
	return FailoverBound(t)
}

// endpointName names the i-th session. Names do not depend on the count, so a scenario that names
// "ep-0" means the same endpoint whatever --endpoints says.
func endpointName(i int) string { return fmt.Sprintf("ep-%d", i) }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func discardIfNil(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// deleteNamespace removes the keys a run wrote on a shared backend, and only those.
func deleteNamespace(ctx context.Context, c *redis.Client, ns string) error {
	if ns == "" {
		return nil
	}
	iter := c.Scan(ctx, 0, ns+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	return c.Del(ctx, keys...).Err()
}
