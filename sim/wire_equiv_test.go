package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/election"
	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/redistest"
	"github.com/tenurelabs/tenure/internal/resp"
	"github.com/tenurelabs/tenure/lease"
	"github.com/tenurelabs/tenure/sim"
	"github.com/tenurelabs/tenure/systems/reference"
)

// eitherClassifier asks each classifier in turn: an instance that runs both a lease manager and an
// elector, classified as the in-process systems classify their own commands.
type eitherClassifier []sim.OpClassifier

func (e eitherClassifier) Classify(args []any, reply any, err error) (history.Op, bool) {
	for _, c := range e {
		if op, ok := c.Classify(args, reply, err); ok {
			return op, true
		}
	}
	return history.Op{}, false
}

func (e eitherClassifier) BookkeepingRead(args []any) bool {
	for _, c := range e {
		if b, ok := c.(sim.BookkeepingReader); ok && b.BookkeepingRead(args) {
			return true
		}
	}
	return false
}

// witness counts the commands a client wrote in full on its connections, housekeeping aside: what
// the wire recorder must account for.
type witness struct {
	mu sync.Mutex
	n  int
}

func (w *witness) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

type witnessConn struct {
	net.Conn
	w *witness
	r *resp.Reader
}

func (c *witnessConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.r.Feed(p[:n])
	for {
		args, ok, rerr := c.r.NextCommand()
		if rerr != nil || !ok {
			return n, err
		}
		if !sim.Housekeeping(strings.ToLower(args[0])) {
			c.w.n++
		}
	}
}

// watched is one instance's client: recorded in process by the hook, and at the wire by a
// WireRecorder it connects through, into two recorders on one time base.
func watched(t *testing.T, upstream, id string, hookRec, wireRec *history.Recorder, hookC, wireC sim.OpClassifier) (*redis.Client, *sim.WireRecorder, *witness) {
	t.Helper()
	w, err := sim.NewWireRecorder(sim.WireConfig{Recorder: wireRec, Instance: id, Upstream: upstream, Classifier: wireC, KeyPrefix: "poll:"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	// No retries: a re-sent command is one call to the hook and two at the wire (see WireRecorder).
	sent := &witness{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &witnessConn{Conn: c, w: sent, r: resp.NewCommandReader(resp.Limits{})}, nil
	}
	cl := redis.NewClient(&redis.Options{Addr: w.Addr(), Dialer: dial, ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 32})
	cl.AddHook(sim.NewRecordingHook(id, hookRec, hookC, "poll:"))
	t.Cleanup(func() { _ = cl.Close() })
	return cl, w, sent
}

// normalised renders each op event without its times (an unknown outcome stays marked) and without the
// text of the failure that left it unknown (the hook sees go-redis's, the wire its own), sorted.
func normalised(t *testing.T, evs []history.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		require.Equal(t, history.KindOp, e.Kind)
		e.Seq, e.At = 0, 0
		if e.End != history.Infinity {
			e.End = 0
		}
		op := *e.Op
		if op.Unknown {
			op.Err = "(no reply)"
			op.GaveUp = 0
		}
		e.Op = &op
		b, err := json.Marshal(e)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// requireSameHistory holds the wire's history to the hook's: the same events and counts, except that
// the hook may hold calls the wire never saw, each unknown: go-redis failed them before they were
// written (their connection's handshake, or the wait for a pooled connection, timed out), and the hook,
// which wraps the whole call, records a call that gets no reply. That these are exactly the extras is
// shown by the witnesses: the wire accounts (events plus counts) for every command written in full.
func requireSameHistory(t *testing.T, hookRec, wireRec *history.Recorder, sent map[string]*witness) []history.Event {
	t.Helper()
	hook, wire := hookRec.Events(), wireRec.Events()
	left := map[string]int{}
	// Link probes (PING) are left out: one sent while the server is stopped times out in the client
	// (the hook's call, unknown) while the wire may see its reply come later, or a client's second
	// attempt answered; which of them each side records depends on the race between the reply and the
	// call's timeout, not on the recorder.
	probe := func(s string) bool { return strings.Contains(s, `"command":"ping"`) }
	for _, s := range normalised(t, hook) {
		if !probe(s) {
			left[s]++
		}
	}
	for _, s := range normalised(t, wire) {
		if !probe(s) {
			left[s]--
		}
	}
	var diff []string
	unsent := map[string]int{}
	for s, n := range left {
		var e history.Event
		require.NoError(t, json.Unmarshal([]byte(s), &e))
		if n > 0 && e.Op.Unknown {
			unsent[e.Instance] += n
			continue
		}
		if n != 0 {
			diff = append(diff, fmt.Sprintf("%+d (hook minus wire) %s", n, s))
		}
	}
	sort.Strings(diff)
	require.Empty(t, diff, "hook recorded %d events, wire %d", len(hook), len(wire))
	require.Equal(t, hookRec.Counted(), wireRec.Counted(), "bookkeeping reads counted alike")
	for id, w := range sent {
		n := 0
		for _, e := range wire {
			if e.Instance == id {
				n++
			}
		}
		for _, c := range wireRec.Counted()[id] {
			n += int(c)
		}
		require.Equal(t, w.count(), n, "%s: the wire accounts for every command written", id)
		t.Logf("%s: %d commands written; %d calls recorded unknown by the hook alone (never written)", id, n, unsent[id])
	}
	return hook
}

// The reference lease manager and the reference election, driven through a real redis-server, give the
// same history whether recorded in process by the hook or at the wire: pipelined renewals and
// acquires, EVALSHA and the EVAL that follows a NOSCRIPT after the script cache is flushed, grants
// that WAIT does not confirm (reference-wait on a server without replicas), the election's
// MULTI/EXEC reads and pub/sub (RESP3 pushes), the bookkeeping reads counted instead of recorded, and
// calls whose replies were lost while the server was stopped. On the wire side the reference's
// scripts are classified by the built-in catalogue, as a process system's would be.
func TestWireRecorderMatchesHookOnReference(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	start := time.Now()
	hookRec, wireRec := history.NewRecorderFrom(start), history.NewRecorderFrom(start)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	for _, ep := range []string{"ep-0", "ep-1", "ep-2"} {
		require.NoError(t, admin.Set(ctx, "session:"+ep, fmt.Sprintf(`{"id":%q}`, ep), 0).Err())
	}
	require.NoError(t, admin.Incr(ctx, lease.SessionVersionKey("")).Err())
	require.NoError(t, lease.MarkEstablished(ctx, admin, "poll:"))

	catalogue := sim.NewBuiltinCatalogue()
	both := eitherClassifier{reference.NewReference(), reference.Election{}}
	waiting := reference.NewReferenceWait(1)
	clientA, wireA, sentA := watched(t, srv.Addr(), "a", hookRec, wireRec, both, catalogue)
	clientB, wireB, sentB := watched(t, srv.Addr(), "b", hookRec, wireRec, waiting, waiting)
	clientC, wireC, sentC := watched(t, srv.Addr(), "c", hookRec, wireRec, reference.Election{}, catalogue)

	logger := slog.New(slog.DiscardHandler)
	manager := func(id string, c *redis.Client, wait int) *lease.Manager {
		cfg := lease.DefaultConfig()
		cfg.InstanceID, cfg.KeyPrefix, cfg.WaitReplicas = id, "poll:", wait
		cfg.LeaseTTL, cfg.RenewInterval, cfg.OpTimeout = 1500*time.Millisecond, 400*time.Millisecond, 250*time.Millisecond
		cfg.HeartbeatInterval, cfg.HeartbeatTTL, cfg.DiscoveryInterval = 400*time.Millisecond, 1500*time.Millisecond, 400*time.Millisecond
		cfg.PollInterval, cfg.SafetyMargin, cfg.Logger = 100*time.Millisecond, 50*time.Millisecond, logger
		cfg.Rand = rand.New(rand.NewSource(int64(len(id))))
		cfg.Poll = func(context.Context, lease.Poll) error { return nil }
		m, err := lease.New(c, cfg)
		require.NoError(t, err)
		require.NoError(t, m.Start(ctx))
		return m
	}
	elector := func(id string, c *redis.Client) *election.Elector {
		cfg := election.DefaultConfig()
		cfg.Role, cfg.InstanceID, cfg.Logger = "r", id, logger
		cfg.TTL, cfg.RenewInterval, cfg.RetryInterval = 1500*time.Millisecond, 400*time.Millisecond, 400*time.Millisecond
		cfg.OpTimeout, cfg.SafetyMargin, cfg.StartJitter, cfg.HandoffTimeout = 250*time.Millisecond, 50*time.Millisecond, 0, 200*time.Millisecond
		cfg.Rand = randv2.New(randv2.NewPCG(1, uint64(len(id))))
		e, err := election.New(election.NewRedisBackend(c, election.RedisOptions{KeyPrefix: "poll:election:", Heartbeat: true}), cfg)
		require.NoError(t, err)
		require.NoError(t, e.Start(ctx))
		return e
	}
	ma := manager("a", clientA, 0)
	mb := manager("b", clientB, 1)
	ea, ec := elector("a", clientA), elector("c", clientC)
	// b never holds: on a server without replicas WAIT 1 confirms nothing, so its grants fail closed
	// (and the endpoints it is assigned stay with nobody).
	holding := func() bool { return len(ma.Held()) > 0 && (ea.IsLeader() || ec.IsLeader()) }
	require.Eventually(t, holding, 10*time.Second, 20*time.Millisecond,
		"a holds %v; a leads %v, c leads %v; wire: %v", ma.Held(), ea.IsLeader(), ec.IsLeader(), wireA.Err())

	// An emptied script cache: the next EVALSHAs fail with NOSCRIPT and are sent again with EVAL.
	require.NoError(t, admin.ScriptFlush(ctx).Err())
	time.Sleep(time.Second)
	// A stopped server: the calls in flight get no reply within their timeout.
	require.NoError(t, srv.Pause())
	time.Sleep(700 * time.Millisecond)
	require.NoError(t, srv.Resume())
	require.Eventually(t, holding, 10*time.Second, 20*time.Millisecond)

	require.NoError(t, ea.Stop(ctx))
	require.NoError(t, ec.Stop(ctx))
	require.NoError(t, ma.Stop(ctx))
	require.NoError(t, mb.Stop(ctx))
	for _, c := range []*redis.Client{clientA, clientB, clientC} {
		require.NoError(t, c.Close())
	}
	for _, w := range []*sim.WireRecorder{wireA, wireB, wireC} {
		require.NoError(t, w.Close())
		require.NoError(t, w.Err(), "everything on the wire was read")
	}

	hook := requireSameHistory(t, hookRec, wireRec, map[string]*witness{"a": sentA, "b": sentB, "c": sentC})
	seen := map[string]bool{}
	for _, e := range hook {
		op := e.Op
		switch {
		case op.Unknown:
			seen["unknown"] = true
		case strings.HasPrefix(op.Err, "NOSCRIPT"):
			seen["noscript"] = true
		case op.NotReplicated:
			seen["not-replicated"] = true
		case strings.HasPrefix(op.Command, "eval ") && op.Kind != history.OpOther:
			seen["eval"] = true
		case op.Command == "multi":
			seen["multi"] = true
		case op.Kind == history.OpAcquire && op.OK && strings.HasSuffix(op.Key, "}:leader"):
			seen["elected"] = true
		case op.Kind == history.OpRenew && op.OK:
			seen["renew"] = true
		}
	}
	require.Equal(t, map[string]bool{"unknown": true, "noscript": true, "not-replicated": true, "eval": true,
		"multi": true, "elected": true, "renew": true}, seen, "the traffic covered what it is meant to")
	require.NotEmpty(t, hookRec.Counted()["a"], "bookkeeping reads were counted")
}

// Transactions, scripts and pub/sub as go-redis sends them, on RESP2 and on RESP3, give the same
// history at the wire as in the hook, but for one thing go-redis does of its own: when a transaction
// does not run (EXECABORT, or EXEC's nil after a WATCH abort) it stamps the failure on every command of
// it, MULTI included, with its own text for the WATCH abort ("redis: transaction failed"); the wire
// records MULTI's own OK, and its own text for the abort. Both say the queued commands had no effect.
func TestWireRecorderMatchesHookOnTransactionsAndPubSub(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	const renewSource = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
	renew := redis.NewScript(renewSource)
	catalogue, err := sim.NewScriptCatalogue(sim.Script{Name: "renew", Source: renewSource, Op: "renew",
		OK: sim.ReplyMatch{Int: func() *int64 { n := int64(1); return &n }()}})
	require.NoError(t, err)

	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			require.NoError(t, admin.FlushAll(ctx).Err()) // the test's own private server
			start := time.Now()
			hookRec, wireRec := history.NewRecorderFrom(start), history.NewRecorderFrom(start)
			w, err := sim.NewWireRecorder(sim.WireConfig{Recorder: wireRec, Instance: "i0", Upstream: srv.Addr(), Classifier: catalogue, KeyPrefix: "poll:"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = w.Close() })
			cl := redis.NewClient(&redis.Options{Addr: w.Addr(), Protocol: protocol, ContextTimeoutEnabled: true, MaxRetries: -1})
			cl.AddHook(sim.NewRecordingHook("i0", hookRec, catalogue, "poll:"))
			t.Cleanup(func() { _ = cl.Close() })

			ps := cl.Subscribe(ctx, "news")
			_, err = ps.Receive(ctx)
			require.NoError(t, err)
			_, err = cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetNX(ctx, "poll:lease:a", "me", time.Second)
				p.Get(ctx, "poll:lease:a")
				return nil
			})
			require.NoError(t, err)
			require.NoError(t, admin.Publish(ctx, "news", "hello").Err())
			msg, err := ps.ReceiveMessage(ctx)
			require.NoError(t, err)
			require.Equal(t, "hello", msg.Payload)
			// A WATCH abort: the key changes between WATCH and EXEC.
			err = cl.Watch(ctx, func(tx *redis.Tx) error {
				require.NoError(t, admin.Set(ctx, "poll:lease:b", "other", 0).Err())
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.SetNX(ctx, "poll:lease:b", "me", time.Second)
					return nil
				})
				return err
			}, "poll:lease:b")
			require.ErrorIs(t, err, redis.TxFailedErr)
			// EXECABORT: a command refused while queued.
			_, err = cl.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetNX(ctx, "poll:lease:c", "me", time.Second)
				p.Do(ctx, "set", "poll:lease:c")
				return nil
			})
			require.ErrorContains(t, err, "EXECABORT")
			// EVALSHA, NOSCRIPT, EVAL; then EVALSHA answered.
			require.NoError(t, renew.Run(ctx, cl, []string{"poll:lease:a"}, "me", 2000).Err())
			require.NoError(t, renew.Run(ctx, cl, []string{"poll:lease:a"}, "me", 2000).Err())
			require.NoError(t, ps.Close())
			require.NoError(t, cl.Close())
			require.NoError(t, w.Close())
			require.NoError(t, w.Err())

			multiErrs := func(evs []history.Event) (n int) {
				for _, e := range evs {
					if e.Op.Command == "multi" && e.Op.Err != "" {
						n++
					}
				}
				return n
			}
			require.Equal(t, 2, multiErrs(hookRec.Events()), "go-redis failed MULTI with each transaction")
			require.Zero(t, multiErrs(wireRec.Events()), "the server answered MULTI OK each time")
			norm := func(evs []history.Event) []string {
				for i := range evs {
					op := *evs[i].Op
					switch {
					case op.Command == "multi":
						op.Err = "" // go-redis stamps a failed transaction's error on MULTI too
					case op.Err == redis.TxFailedErr.Error(),
						strings.HasPrefix(op.Err, "EXEC returned nil"):
						op.Err = "(transaction did not run: a watched key changed)"
					}
					evs[i].Op = &op
				}
				return normalised(t, evs)
			}
			require.Equal(t, norm(hookRec.Events()), norm(wireRec.Events()))
			require.Equal(t, hookRec.Counted(), wireRec.Counted())
			kinds := map[history.OpKind]int{}
			for _, e := range wireRec.Events() {
				kinds[e.Op.Kind]++
			}
			require.Equal(t, map[history.OpKind]int{history.OpAcquire: 1, history.OpRead: 1, history.OpRenew: 2,
				history.OpOther: kinds[history.OpOther]}, kinds, "one grant, one read, two renewals; the rest is not modelled")
		})
	}
}
