package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
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
	// Backend names the Redis deployment to use (a deploy.Open spec); "" means auto.
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
	// Virtual runs in virtual time: inside a testing/synctest bubble, against an in-memory Redis
	// (deploy.Virtual) through in-memory links (chaos.Virtual). See virtual.go for what it refuses.
	Virtual bool
	_       struct{}
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
	// persistence is the virtual Redis's, in virtual time.
	persistence string
}

// jitterSalt separates the jitter's random stream from the nemesis's, so that adding jitter left the
// nemesis schedules of existing seeds as they were.
const jitterSalt = 0x6a09e667f3bcc908

// exploreSalt separates the composing nemesis's random stream from the jitter's and the nemesis's.
const exploreSalt = 0x3c6ef372fe94f82b

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
		n.Kinds = nemesisKinds(o.System, n.Kinds)
		rng := rand.New(rand.NewSource(o.Seed))
		more, err := chaos.Nemesis(rng, n)
		if err != nil {
			return p, fmt.Errorf("%w: %v", ErrOptions, err)
		}
		steps = append(steps, more...)
	}
	if sc.Explore != nil {
		n := *sc.Explore
		n.Instances, n.Endpoints = sc.Instances, sc.Endpoints
		n.CallBound, n.DriftBound = spec.OpTimeout, spec.DriftBound
		if n.TTL == 0 {
			n.TTL = spec.LeaseTTL
		}
		n.Episodes, n.Singles = exploreKinds(o.System, n.Episodes, n.Singles)
		more, err := chaos.Explore(rand.New(rand.NewSource(o.Seed^exploreSalt)), n)
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
	userBackend := o.Backend
	if o.Virtual {
		userBackend = "" // what the scenario needs, which checkVirtual then accepts or refuses
	}
	backendSpec, err := BackendForScenario(userBackend, need, steps)
	if err != nil {
		return p, fmt.Errorf("%w: scenario %s: %v", ErrOptions, sc.Name, err)
	}
	var persistence string
	if o.Virtual {
		if persistence, err = checkVirtual(o, backendSpec); err != nil {
			return p, fmt.Errorf("%w: scenario %s: %w", ErrOptions, sc.Name, err)
		}
	} else if err := deploy.CheckSpec(backendSpec); err != nil {
		return p, fmt.Errorf("%w: %v", ErrOptions, err)
	}
	if ps, ok := o.System.(*ProcessSystem); ok {
		if err := checkProcessPlan(ps, backendSpec, steps); err != nil {
			return p, fmt.Errorf("%w: scenario %s: %w", ErrOptions, sc.Name, err) // chaos.ErrUnsupported stays visible
		}
	}
	if kill, pause := needsControl(steps); (kill || pause) && !o.Virtual {
		if why := deploy.Refuses(backendSpec, pause); why != "" {
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
	return planned{schedule: steps.Scale(o.TimeScale), timing: timing, starts: starts, steady: steady, persistence: persistence}, nil
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

// Run executes one scenario against a fresh backend and returns its history. Setup errors (bad options,
// no backend) are returned before anything is left running. When ctx is cancelled the run stops early,
// every fault is ended, every instance and process stopped, and the partial history returned with
// Meta.Interrupted set.
//
// A run goes through these stages (see stages.go): plan (resolve the options, start nothing), set up (the
// backend, the proxies, the run's bookkeeping on the servers), start the fleet, run the schedule, and
// collect the history. What the set-up opened is closed, last first, when Run returns.
func Run(ctx context.Context, o Options) (res Result, err error) {
	if o.Virtual {
		return runVirtual(ctx, o)
	}
	return runStaged(ctx, o)
}

// runStaged runs the stages; in virtual time, inside the run's bubble.
func runStaged(ctx context.Context, o Options) (res Result, err error) {
	p, err := plan(o)
	if err != nil {
		return res, err
	}
	res.Schedule = p.schedule
	var td teardown
	defer func() { td.run(&res, &err) }()
	// A run ended by runner.fail has nothing worth judging: it returns the error, not a history.
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	s, err := setUp(ctx, o, p, &td)
	if err != nil {
		return res, err
	}
	s.abort = abort
	err = s.startFleet(ctx)
	var fatal *fatalError
	if errors.As(context.Cause(ctx), &fatal) {
		return res, fatal.err
	}
	if err != nil {
		return res, err
	}
	out := s.runSchedule(ctx)
	if errors.As(context.Cause(ctx), &fatal) {
		s.crashAll()
		return res, fatal.err
	}
	res.History, res.FaultErrors = s.collect(out), out.faultErrs
	return res, nil
}

// assumptions states what the system under test relies on in this run, and which of the run's faults
// lie outside that: those the scenario names, every pause (a process frozen between its validity check
// and its action can only be refused by fencing), and a clock drift whose rate error exceeds the bound.
func assumptions(sc Scenario, t Timing, backend deploy.About, s chaos.Schedule) history.Assumptions {
	a := history.Assumptions{DriftBound: t.DriftBound, Persistence: "none", Topology: "single"}
	if backend.Persistence != "" {
		a.Persistence = backend.Persistence
	}
	if backend.Topology != TopologySingle {
		a.Topology = backend.Topology
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
		case chaos.Pause, chaos.WirePause:
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
// On a Redis Cluster every primary is scanned and each key deleted on its own (keys lie in many slots).
func deleteNamespace(ctx context.Context, c redis.UniversalClient, ns string) error {
	if ns == "" {
		return nil
	}
	scan := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, ns+"*", 500).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return err
		}
		return delKeys(ctx, c, keys)
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, c)
}

// delKeys deletes keys one DEL each, in one pipeline: a cluster client routes each to its slot's
// shard, where a DEL of several keys in different slots is refused (CROSSSLOT).
func delKeys(ctx context.Context, c redis.Cmdable, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	p := c.Pipeline()
	for _, k := range keys {
		p.Del(ctx, k)
	}
	_, err := p.Exec(ctx)
	return err
}

// nemesisKinds is the nemesis's fault kinds (all of them when none are named) less those the system
// cannot be put through: a process system shares no client with the harness to stall, and one whose
// runtime does not honour libfaketime cannot have its clock changed. The draw then stays within what
// the system can run, instead of refusing the whole run.
func nemesisKinds(sys System, kinds []string) []string {
	ps, ok := sys.(*ProcessSystem)
	if !ok {
		return kinds
	}
	if len(kinds) == 0 {
		kinds = chaos.NemesisKinds
	}
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if k == "stall" || (k == "clock-drift" && !ps.caps.honoursFaketime()) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// exploreKinds is the composing nemesis's episodes and single faults (all of them when none are named)
// less those the system cannot be put through: a process system cannot be stalled (nemesisKinds says
// which single faults it can take).
func exploreKinds(sys System, episodes, singles []string) ([]string, []string) {
	_, ok := sys.(*ProcessSystem)
	if !ok {
		return episodes, singles
	}
	drawn := len(episodes) == 0
	if drawn {
		episodes = chaos.ExploreEpisodes
	}
	var out []string
	for _, e := range episodes {
		// A process cannot be stalled, nor started behind a cut link here.
		if strings.Contains(e, "stall") || e == "aborted-start" {
			continue
		}
		out = append(out, e)
	}
	if drawn {
		// The check-then-act races of a process system's own code are where its client library meets
		// Redis: the wire pause is drawn for it, twice as often as another episode.
		out = append(out, "wire-pause", "wire-pause")
	}
	return out, nemesisKinds(sys, singles)
}
