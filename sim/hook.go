package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/history"
)

// recordingHook records every command an instance's client sends, with the harness times of the call
// and of the return. It sits outside go-redis's retry loop, so one logical call (with any re-sends after
// lost replies) is one operation — which is what a caller experiences, and what must be linearizable.
type recordingHook struct {
	instance string
	// node, when set, names the node of a topology this client talks to on its own (history.Op.Node):
	// each node holds its own copy of a key.
	node       string
	rec        *history.Recorder
	classifier OpClassifier
	defaults   defaultClassifier
	// dead reports whether the instance has crashed: what a dead instance's leftover goroutines still
	// try to send never leaves (its link is cut), so it is not recorded.
	dead func() bool
	// hold, when set, blocks while the instance's calls may not proceed (a pause or a stall). It is
	// called before a call is sent and again before its reply is handed back, so a reply that arrives
	// meanwhile is seen only afterwards, as a stopped process sees what its socket buffered.
	hold func()
	// wire, when set, is shown every command before it is sent and every reply before it is handed
	// back: an armed wire pause (chaos.WirePause) freezes the instance there, and hold then waits.
	wire func(name string, reply bool) bool
}

// atWire shows the instance's armed wire pause, if any, the commands of a call (before they are sent)
// or their replies (before they are handed back).
func (h *recordingHook) atWire(cmds []redis.Cmder, reply bool) {
	if h.wire == nil {
		return
	}
	for _, c := range cmds {
		if h.wire(c.Name(), reply) {
			return
		}
	}
}

func (h *recordingHook) wait() {
	if h.hold != nil {
		h.hold()
	}
}

func (h *recordingHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.wait()
		c, err := next(ctx, network, addr)
		h.wait()
		return c, err
	}
}

func (h *recordingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.atWire([]redis.Cmder{cmd}, false)
		h.wait()
		if h.dead != nil && h.dead() {
			return next(ctx, cmd)
		}
		at := h.rec.Now()
		err := next(ctx, cmd)
		h.atWire([]redis.Cmder{cmd}, true)
		h.wait()
		if name, counted := h.ops().record(at, h.rec.Now(), wireArgs(cmd.Args()), replyOf(cmd), err, false); counted {
			h.rec.Count(h.instance, name, 1)
		}
		return err
	}
}

func (h *recordingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.atWire(cmds, false)
		h.wait()
		if h.dead != nil && h.dead() {
			return next(ctx, cmds)
		}
		at := h.rec.Now()
		err := next(ctx, cmds)
		h.atWire(cmds, true)
		h.wait()
		end := h.rec.Now()
		unconfirmed := unconfirmedByWait(cmds, err)
		var counted map[string]int64
		for i, c := range cmds {
			if name, ok := h.ops().record(at, end, wireArgs(c.Args()), replyOf(c), cmdErr(c, err), unconfirmed[i]); ok {
				if counted == nil {
					counted = map[string]int64{}
				}
				counted[name]++
			}
		}
		for name, n := range counted {
			h.rec.Count(h.instance, name, n)
		}
		return err
	}
}

// cmdErr is the error of one command of a pipeline whose execution returned err: the command's own, or
// the pipeline's when that is not an error reply (the connection failed: no reply came back).
func cmdErr(c redis.Cmder, err error) error {
	if cerr := c.Err(); cerr != nil || err == nil || isServerError(err) {
		return cerr
	}
	return err
}

// unconfirmedByWait reports, for each command of a pipeline, whether the first WAIT after it in the
// pipeline failed to confirm it: WAIT answered fewer replicas than its numreplicas argument, or gave no
// answer (an error, a timeout). WAIT blocks until every write its connection sent before it has reached
// numreplicas replicas, and a pipeline is sent on one connection, so it speaks for the writes before it.
// Commands with no WAIT after them are not judged (false).
func unconfirmedByWait(cmds []redis.Cmder, err error) []bool {
	out := make([]bool, len(cmds))
	short := false // the verdict of the nearest WAIT after the command, scanning backwards
	for i := len(cmds) - 1; i >= 0; i-- {
		c := cmds[i]
		if strings.EqualFold(c.Name(), "wait") {
			short = waitShort(c.Args(), replyOf(c), cmdErr(c, err))
			continue
		}
		out[i] = short
	}
	return out
}

// waitShort reports whether a WAIT command (args, answered reply or err) answered fewer replicas than
// it asked for, or no number.
func waitShort(args []any, reply any, err error) bool {
	if err != nil || len(args) < 2 {
		return true
	}
	want, perr := strconv.ParseInt(fmt.Sprint(args[1]), 10, 64)
	if perr != nil {
		return true
	}
	got, ok := reply.(int64)
	return !ok || got < want
}

// ops is the hook's opRecorder.
func (h *recordingHook) ops() opRecorder {
	return opRecorder{instance: h.instance, node: h.node, rec: h.rec, classifier: h.classifier, defaults: h.defaults}
}

// opRecorder turns one command and what came back into a history event, or a count: the same for
// every place that sees commands (the go-redis hook, the wire recorder), so that one traffic gives one
// history whichever of them watched it.
type opRecorder struct {
	instance   string
	node       string // history.Op.Node
	rec        *history.Recorder
	classifier OpClassifier
	defaults   defaultClassifier
	// unplaced, when set, notes (once per instance) a write the recorder could not model on a key
	// outside the harness's layout: process systems, whose libraries may name keys their own way.
	unplaced *unplacedKeys
}

// unplacedKeys notes the first write of an instance that the recorder could not place.
type unplacedKeys struct {
	once      sync.Once
	keyPrefix string // the harness's key prefix (TENURE_KEY_PREFIX)
	libPrefix string // the prefix the system file says its library adds ("keys.prefix")
}

// writeCommands change what a key holds; a lock library's acquire, renewal or release is one of them.
var writeCommands = map[string]bool{
	"set": true, "setnx": true, "setex": true, "psetex": true, "getset": true, "getdel": true, "del": true,
	"unlink": true, "expire": true, "pexpire": true, "expireat": true, "pexpireat": true, "persist": true,
	"eval": true, "evalsha": true, "fcall": true, "hset": true, "incr": true,
}

// note records, the first time, a write the recorder did not model whose key is outside the harness's
// layout, with what the system file should say to place it.
func (u *unplacedKeys) note(rec *history.Recorder, at time.Duration, instance, name, key string, op history.Op) {
	if u == nil || op.Kind != history.OpOther || !writeCommands[name] || key == "" {
		return
	}
	lease := u.keyPrefix + "lease:"
	if strings.HasPrefix(key, u.libPrefix+lease) || strings.HasPrefix(key, u.keyPrefix) && !strings.Contains(key, "lease:") {
		return // laid out as expected (a script the catalogue does not know is another matter), or bookkeeping
	}
	u.once.Do(func() {
		var how string
		if i := strings.Index(key, lease); i > 0 {
			how = fmt.Sprintf("it names an endpoint after a prefix of its own (%q): if the library adds it to every name it is given, say so in the system file: \"keys\": {\"prefix\": %q} (docs/protocol.md)", key[:i], u.libPrefix+key[:i])
		} else {
			how = fmt.Sprintf("it names no endpoint: give the library %s<endpoint> as each lock's name, or, if it adds a prefix of its own, say so in the system file: \"keys\": {\"prefix\": ...} (docs/protocol.md)", lease)
		}
		rec.Add(history.Event{Kind: history.KindNote, At: at, Instance: instance,
			Note: fmt.Sprintf("%s%s by %s (%s): the recorder could not model it; %s", history.NoteUnplacedKey, key, instance, name, how)})
	})
}

// commandName is a command's name in lower case ("" when args[0] is not a string).
func commandName(args []any) string {
	if len(args) == 0 {
		return ""
	}
	s, _ := args[0].(string)
	return strings.ToLower(s)
}

// housekeeping reports whether a command only sets up its connection: it is not the system's
// behaviour and is not recorded. A PING is recorded: an answered one is how an instance learns that its
// link is back, which the checker's blind-write judgement asks the history for.
func housekeeping(name string) bool {
	switch name {
	case "hello", "client", "select", "auth", "subscribe", "psubscribe", "unsubscribe", "punsubscribe":
		return true
	}
	return false
}

// record adds one command to the history, or reports (name, true) when it is to be counted instead: a
// read of the system's own bookkeeping (see bookkeeping). args are the command as sent; reply is what
// came back (as go-redis's generic command reads it) unless err is set; err is the error reply
// (redis.Error), redis.Nil for a null, or the failure that left no reply. unconfirmed says that a WAIT
// after the command in its pipeline did not confirm it (see unconfirmedByWait).
func (h opRecorder) record(at, end time.Duration, args []any, reply any, err error, unconfirmed bool) (string, bool) {
	name := commandName(args)
	if housekeeping(name) {
		return "", false
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		reply = nil
	}
	ev := history.Event{Kind: history.KindOp, At: at, End: end, Instance: h.instance}
	var op history.Op
	ok := false
	if err != nil && isServerError(err) {
		// The server answered with an error: the command had no effect. Not modelled.
		op = history.Op{Kind: history.OpOther, Err: err.Error()}
	} else {
		if h.classifier != nil {
			op, ok = h.classifier.Classify(args, reply, err)
		}
		if !ok {
			op = h.defaults.Classify(args, reply, err)
		}
	}
	if h.bookkeeping(name, args, op, err) {
		return name, true
	}
	if op.Key == "" && len(args) > 1 {
		op.Key = keyOf(args)
	}
	op.Node = h.node
	op.Command = abbreviate(args)
	if err != nil && !errors.Is(err, redis.Nil) && !isServerError(err) {
		op.Unknown = true
		op.Err = err.Error()
		op.GaveUp = end
		ev.End = history.Infinity
	}
	if unconfirmed && op.OK && !op.Unknown && h.confirmedByWait(op) {
		op.NotReplicated = true
	}
	ev.Endpoint = endpointOf(op.Key)
	ev.Op = &op
	h.rec.Add(ev)
	h.unplaced.note(h.rec, end, h.instance, name, op.Key, op)
	return "", false
}

// confirmedByWait reports whether the system counts op as done only once WAIT confirms it.
func (h opRecorder) confirmedByWait(op history.Op) bool {
	switch op.Kind {
	case history.OpAcquire, history.OpRenew, history.OpRelease:
	default:
		return false
	}
	wc, ok := h.classifier.(WaitConfirmer)
	return ok && wc.ConfirmedByWait(op)
}

// readOnlyCommands change nothing in Redis.
var readOnlyCommands = map[string]bool{
	"get": true, "mget": true, "strlen": true, "exists": true, "type": true, "ttl": true, "pttl": true,
	"expiretime": true, "pexpiretime": true, "scan": true, "keys": true, "dbsize": true, "info": true,
	"hget": true, "hmget": true, "hgetall": true, "hlen": true, "hexists": true, "smembers": true,
	"scard": true, "sismember": true, "llen": true, "lrange": true, "zcard": true, "zrange": true,
	"zscore": true, "time": true,
}

// bookkeeping reports whether a command is a read of the system's own bookkeeping, counted per instance
// (history.Meta.Counted) rather than recorded: it was answered (a reply, possibly an error reply), the
// model does not use it (OpOther), and it is either a read-only command none of whose arguments names
// a lease or election key (session reads, scans of heartbeats and sessions, heartbeat PTTLs), or a
// command the system's classifier declares a bookkeeping read (a read-only script).
func (h opRecorder) bookkeeping(name string, args []any, op history.Op, err error) bool {
	if op.Kind != history.OpOther || (err != nil && !errors.Is(err, redis.Nil) && !isServerError(err)) {
		return false
	}
	if readOnlyCommands[name] {
		for _, a := range args[1:] {
			if s, ok := a.(string); ok && endpointOf(s) != "" {
				return false
			}
		}
		return true
	}
	br, ok := h.classifier.(BookkeepingReader)
	return ok && br.BookkeepingRead(args)
}

// isServerError reports whether err is an error reply from Redis that proves the command had no effect
// (as opposed to a network failure). The hook sits outside go-redis's retry loop, so a retryable reply
// (LOADING, READONLY, TRYAGAIN, ...) may follow an earlier attempt whose reply was lost and which did
// take effect: those are not proof of anything.
func isServerError(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) || errors.Is(err, redis.Nil) || isNetError(err) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"LOADING", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "ERR max number of clients"} {
		if strings.HasPrefix(msg, p) {
			return false
		}
	}
	return true
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

func replyOf(cmd redis.Cmder) any {
	switch c := cmd.(type) {
	case *redis.Cmd:
		v, _ := c.Result()
		return v
	case *redis.StatusCmd:
		return c.Val()
	case *redis.StringCmd:
		return c.Val()
	case *redis.IntCmd:
		return c.Val()
	case *redis.BoolCmd:
		return c.Val()
	}
	return nil
}

// keyOf returns the first key of a command, for the reader.
func keyOf(args []any) string {
	name := strings.ToLower(fmt.Sprint(args[0]))
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
		if len(args) > 3 {
			return fmt.Sprint(args[3])
		}
		return ""
	case "publish", "scan":
		return ""
	}
	return fmt.Sprint(args[1])
}

// endpointOf extracts the endpoint from a lease key "<prefix>lease:<endpoint>" (tolerating a hash tag),
// or the role from an election key "<prefix>{<role>}:leader".
func endpointOf(key string) string {
	if strings.HasSuffix(key, "}:leader") {
		if i := strings.LastIndex(key, "{"); i >= 0 {
			return key[i+1 : len(key)-len("}:leader")]
		}
	}
	i := strings.LastIndex(key, "lease:")
	if i < 0 {
		return ""
	}
	ep := key[i+len("lease:"):]
	return strings.Trim(ep, "{}")
}

func abbreviate(args []any) string {
	parts := make([]string, 0, len(args))
	for i, a := range args {
		s := fmt.Sprint(a)
		if i == 1 && len(s) == 40 && strings.HasPrefix(strings.ToLower(fmt.Sprint(args[0])), "evalsha") {
			s = s[:8]
		}
		if len(s) > 48 {
			s = s[:45] + "..."
		}
		parts = append(parts, s)
		if i >= 8 {
			parts = append(parts, fmt.Sprintf("(+%d)", len(args)-i-1))
			break
		}
	}
	return strings.Join(parts, " ")
}

// defaultClassifier understands plain lease commands on keys under leasePrefix: SET k v NX PX/EX is an
// acquire, PEXPIRE/EXPIRE an unconditional renew, DEL of one key an unconditional release, GET a read.
// Everything else is recorded but not modelled.
type defaultClassifier struct{ leasePrefix string }

func (d defaultClassifier) Classify(args []any, reply any, err error) history.Op {
	op := history.Op{Kind: history.OpOther}
	if len(args) < 2 {
		return op
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	key := fmt.Sprint(args[1])
	if !strings.HasPrefix(key, d.leasePrefix) {
		return op
	}
	op.Key = key
	switch name {
	case "set":
		if len(args) < 3 {
			return op
		}
		var nx bool
		var ttl time.Duration
		for i := 3; i < len(args); i++ {
			switch strings.ToLower(fmt.Sprint(args[i])) {
			case "nx":
				nx = true
			case "px":
				if i+1 < len(args) {
					n, _ := strconv.ParseInt(fmt.Sprint(args[i+1]), 10, 64)
					ttl = time.Duration(n) * time.Millisecond
				}
			case "ex":
				if i+1 < len(args) {
					n, _ := strconv.ParseInt(fmt.Sprint(args[i+1]), 10, 64)
					ttl = time.Duration(n) * time.Second
				}
			}
		}
		if !nx || ttl <= 0 {
			return op
		}
		op.Kind, op.Owner, op.TTL = history.OpAcquire, fmt.Sprint(args[2]), ttl
		op.OK = err == nil && (reply == "OK" || reply == true)
	case "pexpire", "expire":
		// An unconditional renewal: it extends whoever holds the key. With NX/XX/GT/LT it is not.
		if len(args) != 3 {
			return op
		}
		n, _ := strconv.ParseInt(fmt.Sprint(args[2]), 10, 64)
		unit := time.Millisecond
		if name == "expire" {
			unit = time.Second
		}
		op.Kind, op.Owner, op.TTL = history.OpRenew, history.AnyOwner, time.Duration(n)*unit
		op.OK = err == nil && (reply == true || reply == int64(1))
	case "del":
		if len(args) != 2 {
			return op
		}
		op.Kind, op.Owner = history.OpRelease, history.AnyOwner
		op.OK = err == nil && reply == int64(1)
	case "get":
		op.Kind = history.OpRead
		if s, ok := reply.(string); ok {
			op.Value = s
		}
		op.OK = true
	}
	return op
}
