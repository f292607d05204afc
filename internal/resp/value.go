// Package resp reads and writes the Redis serialization protocol, RESP2 and RESP3, as it crosses a
// socket: commands from the client side (arrays of bulk strings, and inline commands), replies and push
// messages from the server side.
//
// The Reader is incremental — bytes are fed in whatever chunks the network delivers, and a value is
// handed out once it is complete — and bounded: every length the peer declares is checked against
// Limits before anything is kept for it, and memory grows only with the bytes that actually arrived.
// A declared length over a limit, a malformed header or a byte that no RESP type starts with is an
// error (with the stream offset it was found at), never a large allocation or a panic.
//
// Streamed RESP3 strings and aggregates ("$?", "*?", ...) are refused: Redis never sends them.
package resp

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Kind is a RESP type, named by the byte that starts it on the wire.
type Kind byte

// The RESP2 and RESP3 types.
const (
	SimpleString Kind = '+'
	SimpleError  Kind = '-'
	Integer      Kind = ':'
	BulkString   Kind = '$'
	Array        Kind = '*'
	Null         Kind = '_' // RESP3
	Double       Kind = ',' // RESP3
	Boolean      Kind = '#' // RESP3
	BigNumber    Kind = '(' // RESP3
	BulkError    Kind = '!' // RESP3
	Verbatim     Kind = '=' // RESP3
	Map          Kind = '%' // RESP3
	Set          Kind = '~' // RESP3
	Attribute    Kind = '|' // RESP3
	Push         Kind = '>' // RESP3
)

func (k Kind) String() string {
	switch k {
	case SimpleString:
		return "simple string"
	case SimpleError:
		return "simple error"
	case Integer:
		return "integer"
	case BulkString:
		return "bulk string"
	case Array:
		return "array"
	case Null:
		return "null"
	case Double:
		return "double"
	case Boolean:
		return "boolean"
	case BigNumber:
		return "big number"
	case BulkError:
		return "bulk error"
	case Verbatim:
		return "verbatim string"
	case Map:
		return "map"
	case Set:
		return "set"
	case Attribute:
		return "attribute"
	case Push:
		return "push"
	}
	return "kind " + strconv.QuoteRune(rune(k))
}

// Value is one RESP value. Which fields mean something depends on Kind:
//
//   - SimpleString, Error, BulkString, BulkError: Str.
//   - Verbatim: Format (three bytes, "txt" or "mkd") and Str, the text after "fmt:".
//   - Double: Str, the text as sent ("1.5", "inf", "-inf", "nan"); see Float.
//   - BigNumber: Str, the decimal digits with an optional leading '-'; see Big.
//   - Integer: Int. Boolean: Bool.
//   - Array, Set, Push: Elems. Map: Elems holds key, value, key, value, ...
//   - BulkString and Array with Nil set are RESP2's null bulk string ("$-1") and null array ("*-1");
//     Null is RESP3's null ("_").
//
// Attr, when not nil, is the RESP3 attribute (Kind Attribute, Elems as for a Map) that preceded the
// value on the wire.
type Value struct {
	Kind   Kind
	Str    string
	Format string
	Int    int64
	Bool   bool
	Nil    bool
	Elems  []Value
	Attr   *Value
}

// IsNull reports whether v is a null of any protocol version.
func (v Value) IsNull() bool { return v.Kind == Null || v.Nil }

// IsError reports whether v is an error reply (simple or bulk).
func (v Value) IsError() bool { return v.Kind == SimpleError || v.Kind == BulkError }

// Float is the value of a Double ("inf", "-inf" and "nan" included), or 0 for another kind.
func (v Value) Float() float64 {
	if v.Kind != Double {
		return 0
	}
	f, _ := parseDouble(v.Str)
	return f
}

// Big is the value of a BigNumber, or nil for another kind.
func (v Value) Big() *big.Int {
	if v.Kind != BigNumber {
		return nil
	}
	n, ok := new(big.Int).SetString(v.Str, 10)
	if !ok {
		return nil
	}
	return n
}

// Equal reports whether v and w are the same value, attributes included. An empty and a nil Elems are
// the same; a Double is compared by its text, so "nan" equals "nan".
func (v Value) Equal(w Value) bool {
	if v.Kind != w.Kind || v.Str != w.Str || v.Format != w.Format || v.Int != w.Int || v.Bool != w.Bool ||
		v.Nil != w.Nil || len(v.Elems) != len(w.Elems) || (v.Attr == nil) != (w.Attr == nil) {
		return false
	}
	if v.Attr != nil && !v.Attr.Equal(*w.Attr) {
		return false
	}
	for i := range v.Elems {
		if !v.Elems[i].Equal(w.Elems[i]) {
			return false
		}
	}
	return true
}

// String renders v compactly for messages and test failures.
func (v Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v Value) format(b *strings.Builder) {
	if v.Attr != nil {
		b.WriteString("|")
		v.Attr.format(b)
	}
	switch {
	case v.Nil || v.Kind == Null:
		b.WriteString("nil")
		return
	}
	switch v.Kind {
	case SimpleString, BulkString:
		b.WriteString(strconv.Quote(v.Str))
	case SimpleError, BulkError:
		b.WriteString("ERR(" + strconv.Quote(v.Str) + ")")
	case Verbatim:
		b.WriteString(v.Format + ":" + strconv.Quote(v.Str))
	case Integer:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case Double:
		b.WriteString(v.Str + "d")
	case BigNumber:
		b.WriteString(v.Str + "n")
	case Boolean:
		b.WriteString(strconv.FormatBool(v.Bool))
	default:
		open, close := "[", "]"
		switch v.Kind {
		case Map, Attribute:
			open, close = "{", "}"
		case Set:
			open, close = "~{", "}"
		case Push:
			open, close = ">[", "]"
		}
		b.WriteString(open)
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteString(" ")
			}
			e.format(b)
		}
		b.WriteString(close)
	}
}

// parseDouble reads a RESP3 double: a decimal or exponent form, or inf, -inf, nan.
func parseDouble(s string) (float64, bool) {
	switch s {
	case "inf", "+inf":
		return math.Inf(1), true
	case "-inf":
		return math.Inf(-1), true
	case "nan", "-nan":
		return math.NaN(), true
	}
	if s == "" || strings.ContainsAny(s, "_xXpPiInN") {
		return 0, false // no Go literal syntax (hex, underscores) and no other spelling of inf or nan
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range reads as ±Inf or 0, as in Redis
		return 0, false
	}
	return f, true
}

// validBigNumber reports whether s is an optional '-' followed by decimal digits.
func validBigNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
