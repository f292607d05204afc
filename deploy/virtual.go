package deploy

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	mserver "github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/memnet"
	"github.com/tenurelabs/tenure/internal/redisserver"
)

// VirtualAddr is the address the virtual Redis is known by. It is an IP, so no client resolves a name
// (there is no resolver inside a virtual-time bubble); nothing listens on it.
const VirtualAddr = "10.0.0.1:6379"

// VirtualVersion is the redis_version the virtual Redis reports in INFO server.
const VirtualVersion = "7.2.0-miniredis"

// Virtual is one Redis node simulated in memory for runs in virtual time: miniredis, served over
// in-memory connections (internal/memnet), its TTLs and TIME following the clock of the bubble it runs
// in. It keeps the verbs the single-node scenarios need as redis-server does them, so a history judged
// on it means what it would on a real server:
//
//   - Kill ends the "process": every connection is closed and new ones are refused; the dataset is
//     gone. StartKilled starts a new process, empty, with a new run_id.
//   - Save copies the dataset (values and absolute expiry times, as an RDB file keeps them); Reload
//     kills the process and starts a new one (new run_id) from the last copy, dropping what expired
//     meanwhile; with nothing saved it starts empty.
//   - Pause stops the process reading its connections (SIGSTOP): connections stay open, what clients
//     send queues, nothing is answered, and TTLs keep running on the clock; resume serves the queue.
//   - INFO server answers with redis_version and a run_id, which scripts read too (miniredis has no
//     run_id of its own): drawn from the seed, new at every start.
//
// What it cannot be is refused by name: an append-only file (its fsync-every-second loss has no model
// here), replicas, sentinels and cluster slots.
type Virtual struct {
	single
	persistence string
	rng         *rand.Rand

	mu     sync.Mutex // held for bookkeeping only, never across a wait
	m      *miniredis.Miniredis
	runID  string
	killed bool
	// gate is closed while the process runs, open while it is paused; read without the lock by the
	// server's connections, which Kill waits for while holding it.
	gate     atomic.Pointer[chan struct{}]
	conns    map[*memnet.Conn]struct{}
	snapshot *dataset
	dials    int
	closed   bool
}

var _ Deployment = (*Virtual)(nil)

// OpenVirtual starts a virtual Redis with persistence "none" or "rdb" (the files SAVE writes), drawing
// its run_ids from seed. It must be called inside the virtual-time bubble that will use it.
func OpenVirtual(persistence string, seed int64) (*Virtual, error) {
	switch persistence {
	case "", redisserver.PersistNone:
		persistence = redisserver.PersistNone
	case redisserver.PersistRDB:
	default:
		return nil, refuse("the virtual Redis keeps no append-only file (its loss of the last second has no model in memory); run the scenario in real time with --redis server:%s", persistence)
	}
	v := &Virtual{persistence: persistence, rng: rand.New(rand.NewSource(seed ^ 0x5bd1e995)), conns: map[*memnet.Conn]struct{}{}}
	v.single = single{addr: VirtualAddr, admin: redis.NewClient(&redis.Options{Addr: VirtualAddr, MaxRetries: 3,
		ContextTimeoutEnabled: true, Dialer: v.Dial, PoolSize: 4})}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.startLocked(nil); err != nil {
		return nil, err
	}
	return v, nil
}

// startLocked starts a new process, loading from when not nil.
func (v *Virtual) startLocked(from *dataset) error {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	// Dial starts the server without a listener; the pipe it returns is not used (its connections
	// are memnet's, buffered as sockets are).
	c, err := m.Dial()
	if err != nil {
		return fmt.Errorf("deploy: start virtual redis: %w", err)
	}
	_ = c.Close()
	v.runID = v.newRunID()
	runID := v.runID
	m.Server().SetPreHook(func(p *mserver.Peer, cmd string, args ...string) bool {
		if cmd != "INFO" {
			return false
		}
		if len(args) > 1 {
			return false
		}
		if len(args) == 1 {
			switch strings.ToLower(args[0]) {
			case "server", "all", "everything", "default":
			default:
				return false
			}
		}
		p.WriteBulk(fmt.Sprintf("# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\nrun_id:%s\r\n", VirtualVersion, runID))
		return true
	})
	if from != nil {
		if err := from.load(m); err != nil {
			m.Close()
			return err
		}
	}
	v.m = m
	v.killed = false
	running := make(chan struct{})
	close(running)
	v.gate.Store(&running)
	return nil
}

func (v *Virtual) newRunID() string {
	const hex = "0123456789abcdef"
	b := make([]byte, 40)
	for i := range b {
		b[i] = hex[v.rng.Intn(16)]
	}
	return string(b)
}

// RunID is the run_id of the process serving now ("" while killed).
func (v *Virtual) RunID() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.killed {
		return ""
	}
	return v.runID
}

// Dial opens a connection to the node announced at addr (only VirtualAddr exists): a client's Dialer.
// A killed process refuses it.
func (v *Virtual) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	if addr != VirtualAddr {
		return nil, fmt.Errorf("deploy: dial %s: no such virtual node (the virtual Redis is %s)", addr, VirtualAddr)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed || v.killed {
		return nil, &net.OpError{Op: "dial", Net: "mem", Err: errors.New("connection refused")}
	}
	v.dials++
	client, srv := memnet.Pipe(fmt.Sprintf("mem:client-%d", v.dials), VirtualAddr)
	sc := srv.(*memnet.Conn)
	v.conns[sc] = struct{}{}
	v.m.Server().ServeConn(&pausable{Conn: sc, v: v})
	return client, nil
}

// pausable is the server's end of a connection: reading waits while the process is paused.
type pausable struct {
	*memnet.Conn
	v *Virtual
}

func (p *pausable) Read(b []byte) (int, error) {
	p.v.waitRunning()
	n, err := p.Conn.Read(b)
	if n > 0 {
		// Data that arrived during a pause is read when it ends.
		p.v.waitRunning()
	}
	return n, err
}

func (v *Virtual) waitRunning() {
	<-*v.gate.Load()
}

// About implements Deployment.
func (v *Virtual) About() About {
	d := "virtual Redis (miniredis in memory, virtual time)"
	if v.persistence != redisserver.PersistNone {
		d = "virtual Redis (miniredis in memory, virtual time, persistence " + v.persistence + ")"
	}
	return About{Describe: d, Topology: TopologySingle, Persistence: v.persistence}
}

// Kill implements Deployment: the process ends; every connection closes and its data is gone.
func (v *Virtual) Kill(_ context.Context, name string) error {
	if err := v.check(name); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.killLocked()
	return nil
}

func (v *Virtual) killLocked() {
	if v.killed {
		return
	}
	v.killed = true
	for c := range v.conns {
		_ = c.Close()
	}
	v.conns = map[*memnet.Conn]struct{}{}
	// A killed process's queue is never served: the gate opens for its readers to find their
	// connections closed.
	g := *v.gate.Load()
	select {
	case <-g:
	default:
		close(g)
	}
	m := v.m
	// miniredis's Close waits for its connections' goroutines, which take no lock of ours.
	m.Close()
}

// Pause implements Deployment.
func (v *Virtual) Pause(_ context.Context, name string) (func() error, error) {
	if err := v.check(name); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.killed {
		return nil, fmt.Errorf("deploy: pause %s: the virtual Redis is not running", name)
	}
	select {
	case <-*v.gate.Load():
	default:
		return nil, fmt.Errorf("deploy: pause %s: already paused", name)
	}
	g := make(chan struct{})
	v.gate.Store(&g)
	var once sync.Once
	return func() error {
		once.Do(func() {
			v.mu.Lock()
			defer v.mu.Unlock()
			if *v.gate.Load() == g && !v.killed {
				close(g)
			}
		})
		return nil
	}, nil
}

// StartKilled implements Deployment: a new process, empty, with a new run_id.
func (v *Virtual) StartKilled(context.Context) ([]Rejoined, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.killed {
		return nil, nil
	}
	if err := v.startLocked(nil); err != nil {
		return nil, err
	}
	return []Rejoined{{Node: singleName, Role: "primary"}}, nil
}

// Save implements Deployment: with persistence rdb, the dataset as SAVE writes it; refused without.
func (v *Virtual) Save(context.Context) error {
	if v.persistence == redisserver.PersistNone {
		return refuse("the virtual Redis runs without persistence here; the schedule needs persistence rdb")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.killed {
		return errors.New("deploy: save: the virtual Redis is not running")
	}
	d, err := copyDataset(v.m)
	if err != nil {
		return err
	}
	v.snapshot = d
	return nil
}

// Reload implements Deployment: the process is killed and a new one loads the last snapshot.
func (v *Virtual) Reload(context.Context) error {
	if v.persistence == redisserver.PersistNone {
		return refuse("the virtual Redis runs without persistence here; the schedule needs persistence rdb")
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.killLocked()
	return v.startLocked(v.snapshot)
}

// Close implements Deployment.
func (v *Virtual) Close() error {
	v.closeAdmin()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.killLocked()
	v.closed = true
	return nil
}

// dataset is a copy of a database: every key's value and its absolute expiry (zero: none).
type dataset struct {
	keys []savedKey
}

type savedKey struct {
	name, kind string
	expires    time.Time
	str        string
	list       []string
	hash       map[string]string
	zset       map[string]float64
}

func copyDataset(m *miniredis.Miniredis) (*dataset, error) {
	now := time.Now()
	d := &dataset{}
	keys := m.Keys()
	sort.Strings(keys)
	for _, k := range keys {
		s := savedKey{name: k, kind: m.Type(k)}
		if ttl := m.TTL(k); ttl > 0 {
			s.expires = now.Add(ttl)
		}
		var err error
		switch s.kind {
		case "string":
			s.str, err = m.Get(k)
		case "list":
			s.list, err = m.List(k)
		case "set":
			s.list, err = m.Members(k)
		case "hash":
			var fields []string
			if fields, err = m.HKeys(k); err == nil {
				s.hash = map[string]string{}
				for _, f := range fields {
					s.hash[f] = m.HGet(k, f)
				}
			}
		case "zset":
			s.zset, err = m.SortedSet(k)
		default:
			err = fmt.Errorf("a %s, which the virtual Redis's snapshot does not copy", s.kind)
		}
		if err != nil {
			return nil, fmt.Errorf("deploy: save key %q: %w", k, err)
		}
		d.keys = append(d.keys, s)
	}
	return d, nil
}

// load writes the dataset into m, leaving out the keys whose expiry has passed (as loading an RDB
// file does).
func (d *dataset) load(m *miniredis.Miniredis) error {
	now := time.Now()
	for _, s := range d.keys {
		if !s.expires.IsZero() && !s.expires.After(now) {
			continue
		}
		var err error
		switch s.kind {
		case "string":
			err = m.Set(s.name, s.str)
		case "list":
			_, err = m.Push(s.name, s.list...)
		case "set":
			_, err = m.SAdd(s.name, s.list...)
		case "hash":
			fv := make([]string, 0, 2*len(s.hash))
			for f, val := range s.hash {
				fv = append(fv, f, val)
			}
			m.HSet(s.name, fv...)
		case "zset":
			for member, score := range s.zset {
				if _, err = m.ZAdd(s.name, score, member); err != nil {
					break
				}
			}
		}
		if err != nil {
			return fmt.Errorf("deploy: load key %q: %w", s.name, err)
		}
		if !s.expires.IsZero() {
			m.SetTTL(s.name, s.expires.Sub(now))
		}
	}
	return nil
}
