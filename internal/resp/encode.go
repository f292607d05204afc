package resp

import "strconv"

// Append appends v's wire form to dst. v must be well-formed: simple strings and errors without CR or
// LF, a three-byte Format on a Verbatim, a Double's and a BigNumber's Str as the Reader accepts them.
// Nil is honoured on BulkString and Array only (RESP2's nulls).
func (v Value) Append(dst []byte) []byte {
	if v.Attr != nil {
		dst = appendHeader(dst, Attribute, len(v.Attr.Elems)/2)
		for _, e := range v.Attr.Elems {
			dst = e.Append(dst)
		}
	}
	switch v.Kind {
	case SimpleString, SimpleError, Double, BigNumber:
		dst = append(dst, byte(v.Kind))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Integer:
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, v.Int, 10)
		return append(dst, '\r', '\n')
	case Null:
		return append(dst, '_', '\r', '\n')
	case Boolean:
		if v.Bool {
			return append(dst, '#', 't', '\r', '\n')
		}
		return append(dst, '#', 'f', '\r', '\n')
	case BulkString, BulkError:
		if v.Nil {
			return append(dst, byte(v.Kind), '-', '1', '\r', '\n')
		}
		dst = appendHeader(dst, v.Kind, len(v.Str))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case Verbatim:
		dst = appendHeader(dst, v.Kind, len(v.Format)+1+len(v.Str))
		dst = append(dst, v.Format...)
		dst = append(dst, ':')
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	}
	// Aggregates.
	if v.Nil {
		return append(dst, byte(v.Kind), '-', '1', '\r', '\n')
	}
	n := len(v.Elems)
	if v.Kind == Map || v.Kind == Attribute {
		n /= 2
	}
	dst = appendHeader(dst, v.Kind, n)
	for _, e := range v.Elems {
		dst = e.Append(dst)
	}
	return dst
}

func appendHeader(dst []byte, k Kind, n int) []byte {
	dst = append(dst, byte(k))
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// AppendCommand appends a command in the form clients send: an array of bulk strings.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = appendHeader(dst, Array, len(args))
	for _, a := range args {
		dst = appendHeader(dst, BulkString, len(a))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
