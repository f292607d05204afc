package peers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/sim"
)

func init() {
	sim.Register("redsync", func() sim.System { return RedSync{} })
	sim.Register("redsync-setnx-extend", func() sim.System { return RedSync{SetNXOnExtend: true} })
	sim.Register("redlock", func() sim.System { return RedSync{Redlock: true} })
}

// RedSync is github.com/go-redsync/redsync/v4 on one Redis, as a lease system: a mutex per endpoint,
// taken with TryLockContext (one try, WithExpiry(TTL)), extended with ExtendContext every
// RenewInterval, given back with UnlockContext; an instance that finds an endpoint unlocked takes it
// (no balancing). A failed extension ends the holding. The library computes a validity time (Until)
// with its drift factor, but the README's pattern does not consult it, and neither does this wiring.
// SetNXOnExtend selects WithSetNXOnExtend (system redsync-setnx-extend): an extension that finds the key
// gone sets it again.
//
// Redlock selects the algorithm the library is named for (system redlock): one pool per node of three
// independent Redis nodes (the harness starts them: sim.TopologyIndependent), a lock or an extension
// counting when a majority of nodes granted it within the validity time the library computes with its
// drift factor (its default, 1 %). Each node is reached through the instance's own link to it.
type RedSync struct {
	SetNXOnExtend bool
	Redlock       bool
}

// redlockNodes is how many independent nodes Redlock runs on: the smallest set with a majority that
// survives the loss of one node.
const redlockNodes = 3

// Topology implements sim.TopologyUser: Redlock runs on independent nodes, the others on one Redis.
func (r RedSync) Topology() string {
	if r.Redlock {
		return sim.TopologyIndependent
	}
	return sim.TopologySingle
}

// Name implements sim.System.
func (r RedSync) Name() string {
	if r.Redlock {
		return "redlock"
	}
	if r.SetNXOnExtend {
		return "redsync-setnx-extend"
	}
	return "redsync"
}

// Description implements sim.Describer.
func (r RedSync) Description() string {
	switch {
	case r.Redlock:
		return "peer: github.com/go-redsync/redsync/v4 as Redlock, over three independent Redis nodes"
	case r.SetNXOnExtend:
		return "peer: github.com/go-redsync/redsync/v4 with WithSetNXOnExtend, on one Redis"
	}
	return "peer: github.com/go-redsync/redsync/v4, one mutex per endpoint on one Redis, as its README shows"
}

// The library's scripts carry their SHA1 in its source; TestRedSyncScripts checks them against what
// the version in go.mod sends.
var redsyncScripts = map[string]string{
	"d75bb8b5bd13532ddedd17762e772346e39b321e": "touch",
	"b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79": "touch-setnx",
	"e950836ed1e694540c503ef9972b8de518044d3b": "delete",
}

// Classify implements sim.OpClassifier for the extend and unlock scripts; the lock itself is a plain
// SET NX PX, which the harness models as it is.
func (RedSync) Classify(args []any, reply any, err error) (history.Op, bool) {
	if len(args) < 5 {
		return history.Op{}, false
	}
	var kind string
	switch strings.ToLower(fmt.Sprint(args[0])) {
	case "evalsha":
		kind = redsyncScripts[strings.ToLower(fmt.Sprint(args[1]))]
	case "eval":
		kind = redsyncScripts[sha(fmt.Sprint(args[1]))]
	}
	if kind == "" || fmt.Sprint(args[2]) != "1" {
		return history.Op{}, false
	}
	argv := args[4:]
	op := history.Op{Key: fmt.Sprint(args[3]), Owner: fmt.Sprint(argv[0])}
	n, _ := reply.(int64)
	switch kind {
	case "touch", "touch-setnx":
		if len(argv) < 2 {
			return history.Op{}, false
		}
		ms, _ := strconv.ParseInt(fmt.Sprint(argv[1]), 10, 64)
		op.Kind, op.TTL, op.OK = history.OpRenew, time.Duration(ms)*time.Millisecond, err == nil && n != 0
		if kind == "touch-setnx" {
			// Extends the key when it holds the value, sets it when it is gone: an acquire in the model.
			op.Kind = history.OpAcquire
		}
	case "delete":
		// 1 deleted, -1 already gone, 0 held by another.
		op.Kind, op.OK, op.AbsentOK = history.OpRelease, err == nil && (n == 1 || n == -1), true
	}
	return op, true
}

// NewInstance implements sim.System.
func (r RedSync) NewInstance(cfg sim.InstanceConfig) (sim.Instance, error) {
	pools := []redsyncredis.Pool{goredis.NewPool(cfg.Client)}
	if r.Redlock {
		if len(cfg.Nodes) != redlockNodes {
			return nil, fmt.Errorf("peers: redlock needs %d independent Redis nodes and was given %d: run it with --redis independent (or server, or auto)", redlockNodes, len(cfg.Nodes))
		}
		pools = pools[:0]
		for _, c := range cfg.Nodes {
			pools = append(pools, goredis.NewPool(c))
		}
	}
	return newMember(cfg, redsyncLibrary{sys: r, rs: redsync.New(pools...), ttl: cfg.Timing.LeaseTTL}), nil
}

// redsyncLibrary takes a lock with one TryLockContext, keeps it with ExtendContext, gives it back with
// UnlockContext.
type redsyncLibrary struct {
	sys RedSync
	rs  *redsync.Redsync
	ttl time.Duration
}

func (l redsyncLibrary) obtain(ctx context.Context, key, value string) (heldLock, error) {
	opts := []redsync.Option{redsync.WithExpiry(l.ttl), redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return value, nil })}
	if l.sys.SetNXOnExtend {
		opts = append(opts, redsync.WithSetNXOnExtend())
	}
	m := l.rs.NewMutex(key, opts...)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

type redsyncHeld struct{ m *redsync.Mutex }

func (h redsyncHeld) refresh(ctx context.Context) string {
	if ok, err := h.m.ExtendContext(ctx); err != nil || !ok {
		return "extend-failed"
	}
	return ""
}

func (h redsyncHeld) release(ctx context.Context) { _, _ = h.m.UnlockContext(ctx) }
