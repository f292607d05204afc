package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/deploy"
	"github.com/tenurelabs/tenure/history"
)

// The stages of Run, in the order it calls them.

// teardown undoes a run's set-up: each step that opened something adds how to close it.
type teardown []func() error

func (td *teardown) add(f func() error) { *td = append(*td, f) }

// run closes what the set-up opened, last first. An error goes into err while no history exists (the
// run produced nothing usable), and into res.CleanupErrors once one does (the history is still valid).
func (td teardown) run(res *Result, err *error) {
	for i := len(td) - 1; i >= 0; i-- {
		cerr := td[i]()
		switch {
		case cerr == nil:
		case len(res.History.Events) > 0:
			res.CleanupErrors = append(res.CleanupErrors, cerr.Error())
		default:
			*err = errors.Join(*err, cerr)
		}
	}
}

// stagedRun is a run past its set-up: the runner, which the faults act on, and what the later stages
// need beside it.
type stagedRun struct {
	*runner
	p     planned
	start time.Time // wall-clock time of the history's zero
	// lag measures the harness's own lateness through the run (history.Meta.Lag).
	lag *lagMonitor
}

// describeBackend names what the system under test ran on: the Redis deployment, or for a system on
// PostgreSQL the server and the run's table (the Redis beside it serves the harness only).
func (s *stagedRun) describeBackend() string {
	if s.pg != nil {
		return fmt.Sprintf("PostgreSQL at %s (table %s); the harness's Redis: %s", s.pg.addr, s.pg.table, s.backend.About().Describe)
	}
	return s.backend.About().Describe
}

// setUp opens the backend and the proxies, checks the backend is usable, and builds the runner with its
// recorder, session store and endpoint service (and a PostgreSQL table for systems that use one). On a
// shared server the run works in a namespace of its own, deleted at the end.
func setUp(ctx context.Context, o Options, p planned, td *teardown) (*stagedRun, error) {
	sc := o.effectiveScenario()
	// The run's name for what it creates on shared servers (key namespace, proxy names, PostgreSQL
	// table). It must be unique among runs that may share a server at the same time, so it is not drawn
	// from the seed: two runs with one seed would collide. It influences no behaviour.
	runID := uniqueRunID(sc.Name, o.Seed)
	linkPrefix := ""
	if o.Toxiproxy != "" {
		linkPrefix = "tenure-" + runID + "-" // proxy names must not collide on a shared server
	}
	// The proxies first: an external toxiproxy-server also carries a topology's peer links, and the
	// backend, closed first, stops its processes before their links go.
	var proxies chaos.Proxies
	var backend deploy.Deployment
	var err error
	if o.Virtual {
		proxies, backend, err = openVirtual(o, p.persistence, td)
	} else {
		proxies, err = openProxies(o, td)
		if err == nil {
			backend, err = openRunBackend(ctx, o, p.schedule, proxies, linkPrefix, td)
		}
	}
	if err != nil {
		return nil, err
	}
	ns := ""
	if backend.About().Shared {
		ns = "tenure-" + runID + ":"
	}
	admin, err := connectAdmin(ctx, backend)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	rec := history.NewRecorderFrom(start)
	if o.Virtual {
		rec = history.NewStrictRecorderFrom(start)
	}
	stopWatch := backend.Watch(ctx, func(p deploy.Promotion) {
		rec.Add(history.Event{Kind: history.KindNote, At: rec.Now(), Note: PromotionNote(p.From, p.To)})
	})
	td.add(func() error { stopWatch(); return nil })
	// An election on PostgreSQL has it for its backend: the lag monitor pings it as well (its answers
	// are what the election's timing verdicts wait on).
	var pg *pgTarget
	if pu, ok := o.System.(PostgresUser); ok && pu.UsesPostgres() {
		if pg, err = openPostgres(ctx, o.Postgres, runID); err != nil {
			return nil, err
		}
		td.add(pg.close)
	}
	ping, closePings := lagPing(backend, admin)
	td.add(closePings)
	if pg != nil {
		ping = bothPings(ping, pg.pingLag)
	}
	// A process system's own processes are measured beside the harness (what CPU the system itself
	// took); an in-process system's share the harness's process and are not.
	var sysCPU *systemCPU
	var system func() time.Duration
	if _, ok := o.System.(*ProcessSystem); ok {
		sysCPU = newSystemCPU()
		system = sysCPU.used
	}
	// In virtual time nothing is late (the clock stands still while code runs): no monitor, and the
	// history records no lag.
	var lag *lagMonitor
	if !o.Virtual {
		lag = startLagMonitor(realLagSources(rec.Now, ping, system))
	}
	td.add(func() error { lag.stop(rec.Now()); return nil })
	logger := slog.New(newOnceKeys(slog.NewJSONHandler(discardIfNil(o.Log), &slog.HandlerOptions{Level: slog.LevelInfo})))
	r := &runner{
		o: o, sc: sc, timing: p.timing, rec: rec, rng: rand.New(rand.NewSource(o.Seed)), backend: backend, proxies: proxies,
		keyPrefix: ns + "poll:", sessions: newSessionStore(admin, ns+"session:", rec),
		svc: newEndpointService(rec, sc.Fencing, p.timing.PollDuration), logger: logger,
	}
	if c, ok := o.System.(OpClassifier); ok {
		r.classifier = c
	}
	r.linkPrefix = linkPrefix
	r.sysCPU = sysCPU
	r.landings = newLandings(rec, start)
	if ps, ok := o.System.(*ProcessSystem); ok {
		rec.Add(history.Event{Kind: history.KindNote, At: rec.Now(), Note: ps.declaration()})
		if hasClockFaults(p.schedule) {
			if err := r.prepareFaketime(td); err != nil {
				return nil, err
			}
		}
	}
	r.pg = pg
	// Closed first: no instance may outlive the run, and a shared server keeps nothing of it.
	td.add(func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.crashAll()
		if !backend.About().Shared {
			return nil
		}
		return errors.Join(r.sessions.deleteAll(cctx), deleteNamespace(cctx, admin, ns))
	})
	return &stagedRun{runner: r, p: p, start: start, lag: lag}, nil
}

// openRunBackend opens the Redis the scenario and its schedule need (see BackendForScenario). With an
// external toxiproxy-server (Options.Toxiproxy) a deployment of several nodes creates its peer links on
// it too, under linkPrefix, as the instances' links are: every link of the run is then on the server the
// user named (see peerProxies).
func openRunBackend(ctx context.Context, o Options, schedule chaos.Schedule, proxies chaos.Proxies, linkPrefix string, td *teardown) (deploy.Deployment, error) {
	need, err := TopologyNeed(o.System, o.effectiveScenario().Topology)
	if err != nil {
		return nil, err
	}
	spec, err := BackendForScenario(o.Backend, need, schedule)
	if err != nil {
		return nil, err
	}
	peers := &peerProxies{seed: o.Seed}
	if o.Toxiproxy != "" {
		peers.remote = proxies
	}
	td.add(peers.Close)
	// TENURE_TOPOLOGY_LOGS names a directory that receives a Sentinel set's logs when the run ends (one
	// sub-directory per run), to see what the sentinels decided.
	var logDir string
	if d := os.Getenv("TENURE_TOPOLOGY_LOGS"); d != "" && spec == TopologySentinel {
		logDir = filepath.Join(d, fmt.Sprintf("sentinel-%d-%d", o.Seed, time.Now().UnixNano()))
	}
	backend, err := deploy.Open(ctx, spec, deploy.Options{TimeScale: o.TimeScale, Peers: chaos.ForDeploy(peers, linkPrefix), LogDir: logDir})
	if err != nil {
		return nil, err
	}
	td.add(backend.Close)
	return backend, nil
}

// openProxies connects to the external toxiproxy-server of the options, or starts toxiproxy in this
// process.
func openProxies(o Options, td *teardown) (chaos.Proxies, error) {
	var proxies chaos.Proxies
	if o.Toxiproxy != "" {
		r, err := chaos.NewRemote(o.Toxiproxy)
		if err != nil {
			return nil, err
		}
		proxies = r
	} else {
		proxies = chaos.NewEmbedded(o.Seed)
	}
	td.add(proxies.Close)
	return proxies, nil
}

// connectAdmin opens the harness's own connection to the backend (sessions, clean-up; a topology's
// own client, past every proxy) and checks that the backend answers and, unless it is shared, holds
// nothing yet.
func connectAdmin(ctx context.Context, backend deploy.Deployment) (redis.UniversalClient, error) {
	admin, about := backend.Admin(), backend.About()
	if err := admin.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("sim: backend %s does not answer: %w", about.Describe, err)
	}
	if !about.Shared {
		if n, err := admin.DBSize(ctx).Result(); err != nil || n != 0 {
			return nil, fmt.Errorf("sim: backend %s is not empty at start (%d keys, %v): the run's assumptions do not hold", about.Describe, n, err)
		}
	}
	return admin, nil
}

// startFleet writes the endpoints' sessions and starts the scenario's instances. The fleet starts
// together, as after a deploy: the thundering herd is part of every scenario. Each instance starts after
// its own seeded delay (within the scenario's StartJitter), so that their poll and renewal cycles fall
// at other phases on each seed. Interrupted while starting is not an error: the run goes on as a partial
// one like any other.
func (s *stagedRun) startFleet(ctx context.Context) error {
	for i := 0; i < s.sc.Endpoints; i++ {
		if err := s.sessions.Add(ctx, endpointName(i)); err != nil && ctx.Err() == nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, s.sc.Instances)
	for i := 0; i < s.sc.Instances; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if !sleepCtx(ctx, s.p.starts[i]) {
				errs[i] = ctx.Err()
				return
			}
			_, errs[i] = s.StartInstance(ctx)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
		return fmt.Errorf("sim: start fleet: %w", err)
	}
	return nil
}

// scheduled is what running the schedule left: when the run ended, whether ctx cut it short, and the
// faults that could not be applied or ended.
type scheduled struct {
	end         time.Duration
	interrupted bool
	faultErrs   []string
}

// runSchedule applies the fault schedule, recording each fault as it ends, and stays until the end of
// the scenario's duration even if the schedule finished early (or had no step at all). Progress, when
// set, is called on the way and once at the end.
func (s *stagedRun) runSchedule(ctx context.Context) scheduled {
	rec := s.rec
	total := time.Duration(float64(s.sc.Duration) * s.o.TimeScale)
	runCtx, cancelRun := context.WithTimeout(ctx, total-rec.Now())
	defer cancelRun()
	var out scheduled
	var lastFault string
	var mu sync.Mutex
	runner := chaos.Runner{
		Env: s.runner,
		// The schedule keeps the run's own clock, not the recorder's: in virtual time the recorder reads
		// an instant it already read 1 ns later each time, and a wait computed from such a reading ended
		// that many nanoseconds early (a join scheduled at 90 s was recorded 32 ns before a steady
		// window's last sample at 90 s, which then counted the joiner).
		Now:   func() time.Duration { return time.Since(s.start) },
		Sleep: sleepCtx,
		OnApply: func(fr chaos.Record) {
			mu.Lock()
			lastFault = fr.Name
			mu.Unlock()
		},
		OnEnd: func(fr chaos.Record) {
			if fr.Err != nil {
				mu.Lock()
				out.faultErrs = append(out.faultErrs, fmt.Sprintf("%s %s: %v", fr.ID, fr.Name, fr.Err))
				mu.Unlock()
			}
			if !fr.IsFault {
				return
			}
			hf := &history.Fault{ID: fr.ID, Name: fr.Name, Targets: fr.Applied.Targets, Params: fr.Applied.Params,
				Wipes: fr.Applied.Wipes, Removes: fr.Applied.Removes}
			if hf.Wipes && s.backend.About().Topology == TopologyIndependent {
				// A restart of independent nodes wipes the first node's copies only.
				hf.WipedNode = s.backend.Nodes()[0].Name
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
		_ = runner.Run(runCtx, s.p.schedule)
	}()
	if s.o.Progress != nil {
		progress := func() {
			mu.Lock()
			lf := lastFault
			mu.Unlock()
			s.o.Progress(Progress{Elapsed: rec.Now(), Total: total, Live: len(s.Live()), Events: rec.Len(), Last: lf})
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
	out.end = rec.Now()
	out.interrupted = ctx.Err() != nil
	mu.Lock()
	defer mu.Unlock()
	return out
}

// collect ends every instance and returns the history: the events up to the end of the run, with the
// run's metadata, and on the operations whose commands were held on the wire, when they landed.
func (s *stagedRun) collect(out scheduled) history.History {
	s.crashAll()
	// Every operation is recorded now, and every link cut: the held requests that landed are matched
	// to them (what lands no more was lost with its link).
	s.landings.resolve()
	events := s.rec.Events()
	kept := events[:0]
	for _, e := range events {
		if e.At <= out.end {
			kept = append(kept, e)
		}
	}
	sc, timing, o := s.sc, s.timing, s.o
	return history.History{
		Meta: history.Meta{
			Schema: history.SchemaVersion, Scenario: sc.Name, Suite: o.Suite, System: o.System.Name(), Kind: systemKind(o.System),
			Backend: s.describeBackend(), Seed: o.Seed, TimeScale: o.TimeScale,
			Instances: sc.Instances, Endpoints: sc.Endpoints, LeaseTTL: timing.LeaseTTL,
			FailoverBound: FailoverBound(timing), PollInterval: timing.PollInterval, Timing: metaTiming(o.System, timing), DiscoveryInterval: timing.DiscoveryInterval, Fencing: sc.Fencing,
			Steady: s.p.steady, ExpectBalance: sc.ExpectBalance, Duration: out.end, StartedAt: s.start.UTC(),
			Command: o.Command, Interrupted: out.interrupted, Virtual: o.Virtual, Expect: sc.Expect, NotPromised: notPromisedBy(o.System), Tick: tickOf(o.System, timing), Exercises: exercises(sc, sc.Timing.merged(SpecTiming())),
			Assumptions: assumptions(sc, timing, s.backend.About(), s.p.schedule), Counted: s.rec.Counted(),
			Lag: s.lag.stop(out.end),
		},
		Events: kept,
	}
}

// metaTiming is the timing the checker's model derives its deadlines from (history.Timing), with the
// system's dead-peer bound when it declares one (DeadPeerBounder).
func metaTiming(sys System, t Timing) *history.Timing {
	mt := &history.Timing{RenewInterval: t.RenewInterval, HeartbeatInterval: t.HeartbeatInterval, HeartbeatTTL: t.HeartbeatTTL,
		OpTimeout: t.OpTimeout, PollDuration: t.PollDuration, HandshakeReplies: DefaultHandshakeReplies}
	if d, ok := sys.(DeadPeerBounder); ok {
		mt.DeadPeer = d.DeadPeerBound(t)
	}
	if h, ok := sys.(HandshakeReplier); ok {
		mt.HandshakeReplies = h.HandshakeReplies()
	}
	return mt
}

// systemKind is the kind of history a system's runs record: "lease" unless it says otherwise.
func systemKind(s System) string {
	if k, ok := s.(KindReporter); ok {
		return k.Kind()
	}
	return "lease"
}

// MetaFor returns the history header a run of system sys with timing t would record, as far as the
// checker's model reads it (its lease TTL, poll and discovery intervals, Timing and drift bound): what
// checker.BoundTable needs to print the deadlines a run would be held to.
func MetaFor(sys System, t Timing) history.Meta {
	return history.Meta{Schema: history.SchemaVersion, Kind: systemKind(sys), LeaseTTL: t.LeaseTTL, PollInterval: t.PollInterval,
		DiscoveryInterval: t.DiscoveryInterval, FailoverBound: FailoverBound(t), Timing: metaTiming(sys, t),
		Assumptions: history.Assumptions{DriftBound: t.DriftBound, Persistence: "none", Topology: TopologySingle}}
}
