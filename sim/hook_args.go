package sim

import (
	"encoding"
	"fmt"
	"net"
	"strconv"
	"time"
)

// wireArgs renders a go-redis command's arguments as go-redis writes them on the wire, so that the hook
// records (and classifies) what was sent, as the wire recorder does: a float64 score is
// "1795722348292", not Go's "1.795722348292e+12"; a bool is "1" or "0"; a time.Duration counts
// nanoseconds.
func wireArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = wireArg(a)
	}
	return out
}

func wireArg(a any) string {
	switch v := a.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.FormatInt(int64(v), 10)
	case int8:
		return strconv.FormatInt(int64(v), 10)
	case int16:
		return strconv.FormatInt(int64(v), 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint:
		return strconv.FormatUint(uint64(v), 10)
	case uint8:
		return strconv.FormatUint(uint64(v), 10)
	case uint16:
		return strconv.FormatUint(uint64(v), 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 64)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case time.Duration:
		return strconv.FormatInt(v.Nanoseconds(), 10)
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		if err != nil {
			return fmt.Sprint(a)
		}
		return string(b)
	case net.IP:
		return string(v)
	}
	return fmt.Sprint(a) // pointers and the rare rest: readable, if not byte for byte
}
