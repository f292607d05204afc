package resp

import (
	"bytes"
	"fmt"
	"strconv"
)

// Limits bound what a Reader keeps for one message. A zero field takes its default.
type Limits struct {
	// MaxLine is the longest line, type byte included: a header, a simple string or error, a number.
	// Default 1 MiB.
	MaxLine int
	// MaxInline is the longest inline command (a command line without RESP framing). Default 64 KiB,
	// Redis's own limit.
	MaxInline int
	// MaxBulk is the longest bulk string, bulk error or verbatim string. Default 64 MiB.
	MaxBulk int
	// MaxElements is the most elements one message may declare, over all its aggregates (a map or
	// attribute entry counts two). Default 1 << 20.
	MaxElements int
	// MaxDepth is the deepest nesting of aggregates. Default 64.
	MaxDepth int
	// MaxMessage is the most bytes one top-level message may take on the wire. Default 128 MiB.
	MaxMessage int

	_ struct{}
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{MaxLine: 1 << 20, MaxInline: 64 << 10, MaxBulk: 64 << 20, MaxElements: 1 << 20, MaxDepth: 64,
		MaxMessage: 128 << 20}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int }{{&l.MaxLine, &d.MaxLine}, {&l.MaxInline, &d.MaxInline},
		{&l.MaxBulk, &d.MaxBulk}, {&l.MaxElements, &d.MaxElements}, {&l.MaxDepth, &d.MaxDepth},
		{&l.MaxMessage, &d.MaxMessage}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// Error is a stream the Reader cannot read: malformed, or over a limit. Offset counts bytes from the
// start of the stream to the item at fault. A Reader that returned an Error returns it from then on:
// without framing, nothing after it can be trusted.
type Error struct {
	Offset int64
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("resp: at byte %d: %s", e.Offset, e.Msg) }

// Reader decodes a stream of RESP values incrementally: Feed it bytes as they arrive, then call Next
// (or NextCommand) until it reports that it needs more. It is not safe for concurrent use.
type Reader struct {
	lim      Limits
	commands bool

	buf   []byte
	off   int   // first unconsumed byte of buf
	pos   int64 // stream offset of buf[off]
	stack []frame
	attr  *Value // an attribute read at the top level, waiting for the value it describes
	start int64  // stream offset where the current message began
	elems int    // elements declared so far in the current message
	err   error
}

// frame is an aggregate being filled.
type frame struct {
	v    Value
	want int    // elements still to come
	attr *Value // an attribute read inside this aggregate, waiting for the element it describes
}

// NewReader returns a Reader of server messages: replies and pushes, of any RESP2 or RESP3 type.
func NewReader(lim Limits) *Reader { return &Reader{lim: lim.withDefaults()} }

// NewCommandReader returns a Reader of client requests: arrays of bulk strings, or inline commands
// (a line of space-separated, optionally quoted arguments, as Redis splits them). Each command comes
// out of Next as an Array of BulkStrings; empty commands (an empty line, "*0") are skipped, as Redis
// skips them.
func NewCommandReader(lim Limits) *Reader { return &Reader{lim: lim.withDefaults(), commands: true} }

// Feed appends p to the bytes waiting to be decoded. p is copied.
func (r *Reader) Feed(p []byte) {
	if r.off == len(r.buf) {
		r.buf, r.off = r.buf[:0], 0
	} else if r.off > 4096 && r.off > len(r.buf)/2 {
		n := copy(r.buf, r.buf[r.off:])
		r.buf, r.off = r.buf[:n], 0
	}
	r.buf = append(r.buf, p...)
}

// Buffered is the number of bytes fed and not yet consumed by a complete item.
func (r *Reader) Buffered() int { return len(r.buf) - r.off }

// Next returns the next complete top-level value. ok is false when the bytes fed so far end inside a
// value (feed more and call again); err is set when the stream is malformed or over a limit.
func (r *Reader) Next() (v Value, ok bool, err error) {
	for r.err == nil {
		v, done, progress := r.item()
		if r.err != nil || !progress {
			break
		}
		if !done {
			continue // a frame was opened, or an empty command skipped
		}
		if out, ok := r.deliver(v); ok {
			return out, true, nil
		}
	}
	return Value{}, false, r.err
}

// NextCommand is Next for a command Reader, returning the command's arguments.
func (r *Reader) NextCommand() (args []string, ok bool, err error) {
	v, ok, err := r.Next()
	if !ok {
		return nil, false, err
	}
	args = make([]string, len(v.Elems))
	for i, e := range v.Elems {
		args[i] = e.Str
	}
	return args, true, nil
}

// deliver places a complete value: into the aggregate being filled (closing every aggregate it
// completes), or out as a message when it is top-level. ok is true when a message is complete.
func (r *Reader) deliver(v Value) (Value, bool) {
	for {
		if n := len(r.stack); n > 0 {
			top := &r.stack[n-1]
			v.Attr, top.attr = top.attr, nil
			top.v.Elems = append(top.v.Elems, v)
			if top.want--; top.want > 0 {
				return Value{}, false
			}
			v = top.v
			r.stack = r.stack[:n-1]
		} else {
			v.Attr, r.attr = r.attr, nil
			r.start, r.elems = r.pos, 0
			return v, true
		}
		if v.Kind == Attribute {
			// An attribute is no value of its own: it describes the value that follows it.
			if !r.setAttr(v) {
				return Value{}, false
			}
			return Value{}, false
		}
	}
}

// setAttr holds a complete attribute for the next value at the current level.
func (r *Reader) setAttr(a Value) bool {
	slot := &r.attr
	if n := len(r.stack); n > 0 {
		slot = &r.stack[n-1].attr
	}
	if *slot != nil {
		r.fail(0, "an attribute follows another attribute with no value between them")
		return false
	}
	a.Attr = nil
	*slot = &a
	return true
}

func (r *Reader) fail(at int, format string, args ...any) {
	r.err = &Error{Offset: r.pos + int64(at), Msg: fmt.Sprintf(format, args...)}
}

func (r *Reader) consume(n int) {
	r.off += n
	r.pos += int64(n)
}

// skip consumes a top-level item that is no message (an empty command).
func (r *Reader) skip(n int) {
	r.consume(n)
	r.start, r.elems = r.pos, 0
}

// item reads one item at the read position: a scalar or an empty aggregate (done), or the header of
// an aggregate, which it opens as a frame (progress, not done). progress is false when the item is
// not complete yet, or on error (r.err).
func (r *Reader) item() (v Value, done, progress bool) {
	rest := r.buf[r.off:]
	if len(rest) == 0 {
		return Value{}, false, false
	}
	if r.commands && len(r.stack) == 0 && rest[0] != '*' {
		return r.inline()
	}
	line, n, ok := r.line(rest, r.lim.MaxLine)
	if !ok {
		return Value{}, false, false
	}
	if r.pos+int64(n)-r.start > int64(r.lim.MaxMessage) {
		r.fail(0, "message longer than %d bytes (Limits.MaxMessage)", r.lim.MaxMessage)
		return Value{}, false, false
	}
	kind, body := Kind(line[0]), line[1:]
	if r.commands && len(r.stack) > 0 && kind != BulkString {
		r.fail(0, "a command's arguments must be bulk strings: expected '$', got %q", line[0])
		return Value{}, false, false
	}
	switch kind {
	case SimpleString, SimpleError:
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			r.fail(1+i, "line feed inside a %s", kind)
			return Value{}, false, false
		}
		r.consume(n)
		return Value{Kind: kind, Str: string(body)}, true, true
	case Integer:
		i, err := strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			r.fail(0, "integer %q: %v", body, err)
			return Value{}, false, false
		}
		r.consume(n)
		return Value{Kind: Integer, Int: i}, true, true
	case Null:
		if len(body) != 0 {
			r.fail(0, "null with a body %q", body)
			return Value{}, false, false
		}
		r.consume(n)
		return Value{Kind: Null}, true, true
	case Boolean:
		if len(body) != 1 || (body[0] != 't' && body[0] != 'f') {
			r.fail(0, "boolean %q: expected t or f", body)
			return Value{}, false, false
		}
		r.consume(n)
		return Value{Kind: Boolean, Bool: body[0] == 't'}, true, true
	case Double:
		if _, ok := parseDouble(string(body)); !ok {
			r.fail(0, "double %q is not a number", body)
			return Value{}, false, false
		}
		r.consume(n)
		return Value{Kind: Double, Str: string(body)}, true, true
	case BigNumber:
		if !validBigNumber(string(body)) {
			r.fail(0, "big number %q is not a decimal integer", body)
			return Value{}, false, false
		}
		r.consume(n)
		return Value{Kind: BigNumber, Str: string(body)}, true, true
	case BulkString, BulkError, Verbatim:
		return r.bulk(kind, body, n)
	case Array, Set, Push, Map, Attribute:
		return r.aggregate(kind, body, n)
	}
	r.fail(0, "no RESP type starts with %q", line[0])
	return Value{}, false, false
}

// line finds the CRLF-terminated line at the start of rest: it returns the line without CRLF and the
// bytes it takes. ok is false when it is not complete yet, or on error.
func (r *Reader) line(rest []byte, max int) (line []byte, n int, ok bool) {
	window := rest
	if len(window) > max+1 {
		window = window[:max+1]
	}
	i := bytes.IndexAny(window, "\r\n")
	switch {
	case i < 0 && len(rest) > max:
		r.fail(0, "line longer than %d bytes (Limits.MaxLine) or missing its CRLF", max)
		return nil, 0, false
	case i < 0:
		return nil, 0, false
	case rest[i] == '\n':
		r.fail(i, "line feed without a carriage return before it")
		return nil, 0, false
	case i+1 == len(rest):
		return nil, 0, false
	case rest[i+1] != '\n':
		r.fail(i, "carriage return not followed by a line feed")
		return nil, 0, false
	case i == 0:
		r.fail(0, "empty line where a type byte was expected")
		return nil, 0, false
	}
	return rest[:i], i + 2, true
}

// length reads the declared length of a bulk or aggregate: a non-negative decimal without leading
// zeros, or -1 where RESP2 allows a null. Streamed RESP3 ("?") is refused.
func (r *Reader) length(kind Kind, body []byte) (int64, bool) {
	if string(body) == "?" {
		r.fail(0, "streamed RESP3 %s (%q) is not supported (Redis never sends one)", kind, string(kind)+"?")
		return 0, false
	}
	if string(body) == "-1" {
		if !r.commands && (kind == BulkString || kind == Array) {
			return -1, true
		}
		r.fail(0, "a %s cannot have length -1", kind)
		return 0, false
	}
	if len(body) == 0 || len(body) > 18 || (body[0] == '0' && len(body) > 1) {
		r.fail(0, "%s length %q is not a canonical non-negative decimal", kind, body)
		return 0, false
	}
	var n int64
	for _, c := range body {
		if c < '0' || c > '9' {
			r.fail(0, "%s length %q is not a decimal number", kind, body)
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func (r *Reader) bulk(kind Kind, body []byte, hdr int) (Value, bool, bool) {
	size, ok := r.length(kind, body)
	if !ok {
		return Value{}, false, false
	}
	if size < 0 {
		r.consume(hdr)
		return Value{Kind: kind, Nil: true}, true, true
	}
	if size > int64(r.lim.MaxBulk) {
		r.fail(0, "%s of %d bytes is over the limit of %d (Limits.MaxBulk)", kind, size, r.lim.MaxBulk)
		return Value{}, false, false
	}
	need := hdr + int(size) + 2
	if r.pos+int64(need)-r.start > int64(r.lim.MaxMessage) {
		r.fail(0, "message longer than %d bytes (Limits.MaxMessage)", r.lim.MaxMessage)
		return Value{}, false, false
	}
	rest := r.buf[r.off:]
	if len(rest) < need {
		return Value{}, false, false // wait for the payload: nothing is kept for it before it arrives
	}
	if rest[need-2] != '\r' || rest[need-1] != '\n' {
		r.fail(need-2, "%s of %d bytes not followed by CRLF", kind, size)
		return Value{}, false, false
	}
	payload := rest[hdr : need-2]
	v := Value{Kind: kind}
	if kind == Verbatim {
		if len(payload) < 4 || payload[3] != ':' {
			r.fail(hdr, "verbatim string %q does not start with a three-byte format and ':'", payload)
			return Value{}, false, false
		}
		v.Format, v.Str = string(payload[:3]), string(payload[4:])
	} else {
		v.Str = string(payload)
	}
	r.consume(need)
	return v, true, true
}

func (r *Reader) aggregate(kind Kind, body []byte, hdr int) (Value, bool, bool) {
	if r.commands && (string(body) == "0" || string(body) == "-1") {
		r.skip(hdr) // Redis ignores an empty multibulk: no command, no reply
		return Value{}, false, true
	}
	count, ok := r.length(kind, body)
	if !ok {
		return Value{}, false, false
	}
	if count < 0 {
		r.consume(hdr)
		return Value{Kind: kind, Nil: true}, true, true
	}
	if count > int64(r.lim.MaxElements) {
		r.fail(0, "%s of %d elements is over the limit of %d (Limits.MaxElements)", kind, count, r.lim.MaxElements)
		return Value{}, false, false
	}
	elems := int(count)
	if kind == Map || kind == Attribute {
		elems *= 2
	}
	if r.elems+elems > r.lim.MaxElements {
		r.fail(0, "message of more than %d elements (Limits.MaxElements)", r.lim.MaxElements)
		return Value{}, false, false
	}
	if len(r.stack)+1 > r.lim.MaxDepth {
		r.fail(0, "aggregates nested deeper than %d (Limits.MaxDepth)", r.lim.MaxDepth)
		return Value{}, false, false
	}
	if kind == Attribute {
		slot := r.attr
		if n := len(r.stack); n > 0 {
			slot = r.stack[n-1].attr
		}
		if slot != nil {
			r.fail(0, "an attribute follows another attribute with no value between them")
			return Value{}, false, false
		}
	}
	r.elems += elems
	r.consume(hdr)
	v := Value{Kind: kind}
	if elems == 0 {
		if kind == Attribute {
			r.setAttr(v)
			return Value{}, false, true
		}
		v.Elems = []Value{}
		return v, true, true
	}
	// Room for a few elements only: the declared count is a claim, and memory follows what arrives.
	v.Elems = make([]Value, 0, min(elems, 8))
	r.stack = append(r.stack, frame{v: v, want: elems})
	return Value{}, false, true
}
