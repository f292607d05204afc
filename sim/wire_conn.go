package sim

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/history"
	"github.com/tenurelabs/tenure/internal/resp"
)

// wireCmd is one command read from a client, until it is recorded.
type wireCmd struct {
	args []any // strings, as sent
	name string
	at   time.Duration
	// skip: read while the instance was dead; tracked to keep replies in step, never recorded.
	skip bool
	// confirmations, on a (P|S)(UN)SUBSCRIBE: how many confirmation messages stand for its reply (it
	// has no reply of its own unless it fails).
	confirmations int

	end         time.Duration
	reply       any
	err         error
	unconfirmed bool // a WAIT after it in its batch did not confirm it
}

// wireConn follows one client connection: it matches each reply to its command and records both. The
// server answers a connection's commands in order, so replies are matched first in, first out, except
// for what is not a reply: RESP3 pushes, RESP2 pub/sub messages in subscribe mode, MONITOR's feed.
type wireConn struct {
	w  *WireRecorder
	id int

	mu   sync.Mutex
	reqs *resp.Reader
	reps *resp.Reader

	proto    int  // 2 until a HELLO switches it
	channels int  // RESP2: channels and patterns subscribed, as the last confirmation counted them
	shards   int  // RESP2: shard channels subscribed
	monitor  bool // MONITOR answered: everything the server sends is its feed
	replyOff bool // CLIENT REPLY OFF: commands get no reply until CLIENT REPLY ON
	skipNext bool // CLIENT REPLY SKIP: the next command gets no reply

	out []*wireCmd // sent, waiting for a reply, in order
	// txn holds the commands queued since MULTI was answered OK, waiting for EXEC's reply; nil outside
	// a transaction.
	txn   []*wireCmd
	inTxn bool
	// held keeps the batch's answered commands, in the order they were sent, until the batch ends
	// (nothing outstanding): a WAIT speaks for the writes before it in the batch, and a batch cut short
	// is unknown as a whole.
	held []*wireCmd

	reqBroken bool // the client's stream could not be read: later commands are unknown to the recorder
	repBroken bool // the server's stream could not be read: no reply can be matched any more

	seen bool // the client has sent something
	// holdChunk: a wire pause froze the instance at a command of the chunk being read; the chunk waits.
	holdChunk bool
}

// takeHold reports, once, whether the chunk just read must wait for the instance to wake.
func (c *wireConn) takeHold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.holdChunk
	c.holdChunk = false
	return h
}

// maxHeld bounds the answered commands held for a WAIT: a client that never lets its connection go
// idle has its commands recorded anyway, unjudged by a WAIT past this many.
const maxHeld = 1024

func newWireConn(w *WireRecorder, id int) *wireConn {
	return &wireConn{w: w, id: id, proto: 2, reqs: resp.NewCommandReader(resp.Limits{}), reps: resp.NewReader(resp.Limits{})}
}

// clusterBusSignature starts every message of the Redis Cluster bus ("RCmb").
var clusterBusSignature = []byte("RCmb")

// requests reads bytes the client sent, before they are forwarded, so every command is stamped (and
// waiting for its reply) before the server can see it. It refuses a connection that opens with a Redis
// Cluster bus message: not the instance's, but a cluster node dialling a peer's old address that the
// recorder's listener was given since (a free port reused while tests run side by side). It is closed
// unforwarded, and noted.
func (c *wireConn) requests(p []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reqBroken {
		return true
	}
	if !c.seen {
		c.seen = true
		if bytes.HasPrefix(p, clusterBusSignature) {
			c.w.cfg.Recorder.Add(history.Event{Kind: history.KindNote, At: c.w.cfg.Recorder.Now(), Instance: c.w.cfg.Instance,
				Note: fmt.Sprintf("wire recorder of %s: connection %d opened with a Redis Cluster bus message, not a client's command: another process dialled a port the recorder was given; closed unread", c.w.cfg.Instance, c.id)})
			return false
		}
	}
	c.reqs.Feed(p)
	for {
		args, ok, err := c.reqs.NextCommand()
		if err != nil {
			c.reqBroken = true
			c.w.fault(fmt.Errorf("sim: wire recorder of %s, connection %d: the client sent what is not a Redis command: %w", c.w.cfg.Instance, c.id, err))
			return true
		}
		if !ok {
			return true
		}
		c.command(args)
	}
}

func (c *wireConn) command(args []string) {
	cmd := &wireCmd{args: make([]any, len(args)), name: strings.ToLower(args[0]), at: c.w.cfg.Recorder.Now()}
	for i, a := range args {
		cmd.args[i] = a
	}
	cmd.skip = c.w.cfg.Dead != nil && c.w.cfg.Dead()
	if !cmd.skip && c.w.cfg.wire != nil && c.w.cfg.wire(cmd.name, false) {
		c.holdChunk = true
	}
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(args[1])
	}
	if (cmd.name == "eval" || cmd.name == "eval_ro") && len(args) > 1 {
		c.w.learn(args[1])
	}
	switch {
	case c.repBroken:
		c.finish(cmd, c.w.cfg.Recorder.Now(), nil, errUnreadable)
		c.settle()
		return
	case c.replyOff && !(cmd.name == "client" && sub == "reply" && len(args) > 2 && strings.EqualFold(args[2], "on")):
		c.finish(cmd, c.w.cfg.Recorder.Now(), nil, errNoReplyAsked)
		c.settle()
		return
	case c.skipNext:
		c.skipNext = false
		c.finish(cmd, c.w.cfg.Recorder.Now(), nil, errNoReplyAsked)
		c.settle()
		return
	case cmd.name == "client" && sub == "reply" && len(args) > 2:
		switch strings.ToLower(args[2]) {
		case "off":
			c.replyOff = true
			return // no reply, and CLIENT is housekeeping: nothing to record
		case "skip":
			c.skipNext = true
			return
		case "on":
			c.replyOff = false
		}
	}
	switch cmd.name {
	case "subscribe", "psubscribe", "ssubscribe":
		if len(args) > 1 { // without a channel it is an arity error: an ordinary reply
			cmd.confirmations = len(args) - 1
		}
	case "unsubscribe", "punsubscribe", "sunsubscribe":
		// One confirmation per channel named, or per channel left when none is (at least one).
		cmd.confirmations = max(len(args)-1, 1)
	}
	c.out = append(c.out, cmd)
}

// replies reads bytes the server sent, before they are forwarded, so a reply is stamped before the
// client can act on it.
func (c *wireConn) replies(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repBroken {
		return
	}
	c.reps.Feed(p)
	for {
		v, ok, err := c.reps.Next()
		if err != nil {
			c.w.fault(fmt.Errorf("sim: wire recorder of %s, connection %d: the server sent what is not RESP: %w", c.w.cfg.Instance, c.id, err))
			c.breakReplies()
			return
		}
		if !ok {
			return
		}
		c.reply(v)
		if c.repBroken {
			return
		}
	}
}

// breakReplies gives up matching replies: what is outstanding ends unknown, and so will every later
// command.
func (c *wireConn) breakReplies() {
	c.repBroken = true
	c.cutShort(c.w.cfg.Recorder.Now(), errUnreadable)
}

// pubsubKinds are the first elements of the messages a subscribed connection receives.
var pubsubKinds = map[string]bool{"message": true, "pmessage": true, "smessage": true, "subscribe": true,
	"unsubscribe": true, "psubscribe": true, "punsubscribe": true, "ssubscribe": true, "sunsubscribe": true}

func pubsubKind(v resp.Value) string {
	if (v.Kind != resp.Array && v.Kind != resp.Push) || len(v.Elems) == 0 {
		return ""
	}
	k := strings.ToLower(v.Elems[0].Str)
	if !pubsubKinds[k] {
		return ""
	}
	return k
}

func (c *wireConn) reply(v resp.Value) {
	now := c.w.cfg.Recorder.Now()
	kind := pubsubKind(v)
	waitingConfirmation := len(c.out) > 0 && c.out[0].confirmations > 0 && !v.IsError()
	switch {
	case v.Kind == resp.Push, c.monitor,
		c.proto == 2 && kind != "" && (c.channels+c.shards > 0 || waitingConfirmation):
		c.push(v, kind)
		return
	}
	// A subscription change whose confirmations have not all come, then an ordinary reply: the
	// subscription change is done (its confirmations went elsewhere); the reply is the next command's.
	for len(c.out) > 0 && c.out[0].confirmations > 0 && !v.IsError() {
		c.out = c.out[1:]
	}
	if len(c.out) == 0 {
		if c.reqBroken {
			return // the reply to what the client sent that was not a command
		}
		c.w.fault(fmt.Errorf("sim: wire recorder of %s, connection %d: a reply (%.60s) with no command waiting for it", c.w.cfg.Instance, c.id, v.String()))
		c.breakReplies()
		return
	}
	cmd := c.out[0]
	c.out = c.out[1:]
	if !cmd.skip && c.w.cfg.wire != nil {
		// A pause at this reply freezes the instance before the reply is passed on: it finds it in its
		// socket on waking.
		c.w.cfg.wire(cmd.name, true)
	}
	if cmd.confirmations > 0 {
		c.settle() // a subscription change that failed: housekeeping, not recorded
		return
	}
	reply, err := replyOfValue(v)
	switch {
	case c.inTxn && cmd.name == "exec":
		c.exec(cmd, now, v)
	case c.inTxn && cmd.name == "discard":
		c.endTxn(now, errDiscarded)
		c.finish(cmd, now, reply, err)
	case c.inTxn && err == nil && reply == "QUEUED":
		c.txn = append(c.txn, cmd) // its outcome comes with EXEC's reply
	default:
		c.finish(cmd, now, reply, err)
		c.answered(cmd, v, err == nil)
	}
	c.settle()
}

// answered applies what a reply changes in the connection's state.
func (c *wireConn) answered(cmd *wireCmd, v resp.Value, ok bool) {
	if !ok {
		return
	}
	switch cmd.name {
	case "multi":
		c.inTxn, c.txn = true, nil
	case "hello":
		if len(cmd.args) > 1 {
			if p, err := strconv.Atoi(cmd.args[1].(string)); err == nil && (p == 2 || p == 3) {
				c.proto = p
			}
		}
	case "reset":
		c.endTxn(cmd.end, errReset)
		c.proto, c.channels, c.shards, c.monitor, c.replyOff, c.skipNext = 2, 0, 0, false, false, false
	case "monitor":
		c.monitor = true
	case "script":
		if len(cmd.args) > 2 && strings.EqualFold(cmd.args[1].(string), "load") {
			c.w.learn(cmd.args[2].(string))
		}
	}
}

// push takes a message that is no reply. A subscription change's confirmation stands for its reply.
func (c *wireConn) push(v resp.Value, kind string) {
	if kind == "" || kind == "message" || kind == "pmessage" || kind == "smessage" {
		return
	}
	if c.proto == 2 && len(v.Elems) > 2 && v.Elems[2].Kind == resp.Integer {
		if strings.HasPrefix(kind, "s") {
			c.shards = int(v.Elems[2].Int)
		} else {
			c.channels = int(v.Elems[2].Int)
		}
	}
	if len(c.out) > 0 && c.out[0].confirmations > 0 && c.out[0].name == kind {
		if c.out[0].confirmations--; c.out[0].confirmations == 0 {
			c.out = c.out[1:]
			c.settle()
		}
	}
}

// exec hands each queued command its outcome from EXEC's reply: its element of the array, or the
// failure of the whole transaction (an error reply such as EXECABORT, or a nil after a WATCH abort).
func (c *wireConn) exec(cmd *wireCmd, now time.Duration, v resp.Value) {
	queued := c.txn
	c.txn, c.inTxn = nil, false
	reply, err := replyOfValue(v)
	switch {
	case v.IsNull():
		err = errWatchAborted
		for _, q := range queued {
			c.finish(q, now, nil, err)
		}
	case err != nil:
		for _, q := range queued {
			c.finish(q, now, nil, err)
		}
	case len(v.Elems) != len(queued):
		c.w.fault(fmt.Errorf("sim: wire recorder of %s, connection %d: EXEC answered %d replies for %d queued commands", c.w.cfg.Instance, c.id, len(v.Elems), len(queued)))
		for _, q := range queued {
			c.finish(q, now, nil, errUnreadable)
		}
	default:
		for i, q := range queued {
			r, e := replyOfValue(v.Elems[i])
			c.finish(q, now, r, e)
		}
	}
	c.finish(cmd, now, reply, err)
}

// endTxn ends a transaction that did not run: its queued commands had no effect.
func (c *wireConn) endTxn(now time.Duration, why error) {
	for _, q := range c.txn {
		c.finish(q, now, nil, why)
	}
	c.txn, c.inTxn = nil, false
}

// finish gives cmd its outcome and holds it for recording.
func (c *wireConn) finish(cmd *wireCmd, end time.Duration, reply any, err error) {
	cmd.end, cmd.reply, cmd.err = end, reply, err
	c.held = append(c.held, cmd)
	if cmd.name != "wait" {
		return
	}
	// A WAIT speaks for the writes sent before it on its connection: those of its batch that no WAIT
	// has judged yet.
	short := waitShort(cmd.args, reply, err)
	for i := len(c.held) - 2; i >= 0 && c.held[i].name != "wait"; i-- {
		c.held[i].unconfirmed = short
	}
}

// cutShort ends a batch that will not complete (its connection closed, or its replies became
// unreadable): every command of it is unknown, the answered ones too, but for those answered with an
// error or a null. A client that loses one reply of a pipeline fails the whole pipeline (go-redis,
// redis-py do), leaving a command only the error it already had, so the instance saw none of the
// others succeed; that is what the history records (history.Op: as the instance's client saw it).
func (c *wireConn) cutShort(now time.Duration, why error) {
	for _, h := range c.held {
		if h.err == nil {
			h.end, h.reply, h.err = now, nil, why
		}
	}
	for _, cmd := range c.txn {
		c.finish(cmd, now, nil, why)
	}
	for _, cmd := range c.out {
		if cmd.confirmations == 0 {
			c.finish(cmd, now, nil, why)
		}
	}
	c.out, c.txn, c.inTxn = nil, nil, false
	c.flush()
}

// settle records what is held once the batch is over: nothing outstanding, no transaction open.
func (c *wireConn) settle() {
	if (len(c.out) == 0 && !c.inTxn) || len(c.held) > maxHeld {
		c.flush()
	}
}

func (c *wireConn) flush() {
	ops := c.w.ops
	var counted map[string]int64
	for _, h := range c.held {
		if h.skip {
			continue
		}
		if name, ok := ops.record(h.at, h.end, h.args, h.reply, h.err, h.unconfirmed); ok {
			if counted == nil {
				counted = map[string]int64{}
			}
			counted[name]++
		}
	}
	for name, n := range counted {
		c.w.cfg.Recorder.Count(c.w.cfg.Instance, name, n)
	}
	c.held = c.held[:0]
}

// closed ends the connection: a batch still waiting for replies is unknown (cutShort), but a
// transaction whose EXEC was never sent did not run.
func (c *wireConn) closed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.w.cfg.Recorder.Now()
	execSent := false
	for _, cmd := range c.out {
		execSent = execSent || cmd.name == "exec"
	}
	if c.inTxn && !execSent {
		// EXEC was never sent: the server discards the transaction, and what was sent after MULTI
		// was queued in it (or refused).
		c.endTxn(now, errNeverExec)
		for _, cmd := range c.out {
			c.finish(cmd, now, nil, errNeverExec)
		}
		c.out = nil
		c.flush()
		return
	}
	c.cutShort(now, errNoReply)
}
