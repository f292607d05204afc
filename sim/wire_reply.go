package sim

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/tenurelabs/tenure/internal/resp"
)

// wireError is an error reply read at the wire, or a verdict with the same meaning (the command had no
// effect). It satisfies redis.Error as go-redis's own error replies do, so the recorder judges it as
// the hook judges theirs (isServerError).
type wireError string

func (e wireError) Error() string { return string(e) }

// RedisError marks wireError as a reply of the server (redis.Error).
func (wireError) RedisError() {}

var (
	// errNoReply is the outcome of a command whose connection closed before its reply came: it may or
	// may not have taken effect.
	errNoReply = errors.New("no reply: the connection closed with the command outstanding")
	// errUnreadable is the outcome of a command whose reply could not be told apart from the others:
	// the server's stream was not RESP the recorder can read.
	errUnreadable = errors.New("no reply read: the server's replies on this connection could not be decoded")
	// errNoReplyAsked is the outcome of a command sent while the client had turned replies off.
	errNoReplyAsked = errors.New("no reply: the client turned replies off (CLIENT REPLY)")
)

// Verdicts on the commands of a transaction that never ran. Each is proof of no effect.
const (
	errWatchAborted = wireError("EXEC returned nil: a watched key changed, the transaction did not run")
	errDiscarded    = wireError("DISCARD: the transaction did not run")
	errNeverExec    = wireError("the connection closed before EXEC: the transaction did not run")
	errReset        = wireError("RESET: the transaction did not run")
)

// replyOfValue turns a reply read at the wire into what go-redis's generic command (redis.Cmd) would
// hand a classifier for it: a null is redis.Nil, an error reply an error, a string a string, an
// integer an int64, a double a float64, a boolean a bool, a big number a *big.Int, an array, set or
// push a []any, a map a map[any]any; attributes are dropped. Inside an aggregate a null is nil and an
// error reply an error value.
func replyOfValue(v resp.Value) (any, error) {
	switch {
	case v.IsNull():
		return nil, redis.Nil
	case v.IsError():
		return nil, wireError(v.Str)
	}
	return plainValue(v), nil
}

func plainValue(v resp.Value) any {
	switch {
	case v.IsNull():
		return nil
	case v.IsError():
		return wireError(v.Str)
	}
	switch v.Kind {
	case resp.Integer:
		return v.Int
	case resp.Double:
		return v.Float()
	case resp.Boolean:
		return v.Bool
	case resp.BigNumber:
		return v.Big()
	case resp.Array, resp.Set, resp.Push:
		out := make([]any, len(v.Elems))
		for i, e := range v.Elems {
			out[i] = plainValue(e)
		}
		return out
	case resp.Map:
		out := make(map[any]any, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			k := plainValue(v.Elems[i])
			switch k.(type) {
			case []any, map[any]any:
				k = fmt.Sprint(k) // not a valid map key; go-redis refuses such a reply
			}
			out[k] = plainValue(v.Elems[i+1])
		}
		return out
	}
	return v.Str // simple, bulk and verbatim strings
}
