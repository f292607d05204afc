package resp

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func str(k Kind, s string) Value { return Value{Kind: k, Str: s} }
func bulk(s string) Value        { return str(BulkString, s) }
func num(n int64) Value          { return Value{Kind: Integer, Int: n} }
func agg(k Kind, e ...Value) Value {
	if e == nil {
		e = []Value{}
	}
	return Value{Kind: k, Elems: e}
}

// readAll feeds in whole, then reads every complete value.
func readAll(t *testing.T, r *Reader, in string) ([]Value, error) {
	t.Helper()
	r.Feed([]byte(in))
	var out []Value
	for {
		v, ok, err := r.Next()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, v)
	}
}

// Every RESP2 and RESP3 type a server sends, as Redis writes it.
func TestReaderReadsEveryType(t *testing.T) {
	attrV := agg(Attribute, str(SimpleString, "key-popularity"), agg(Map, bulk("a"), Value{Kind: Double, Str: "0.1923"}))
	withAttr := agg(Array, num(2039123), num(9543892))
	withAttr.Attr = &attrV
	nestedAttr := agg(Array, num(1), num(2))
	inner := agg(Attribute, str(SimpleString, "ttl"), num(3600))
	nestedAttr.Elems[1].Attr = &inner

	cases := []struct {
		name string
		in   string
		want Value
	}{
		{"simple string", "+OK\r\n", str(SimpleString, "OK")},
		{"empty simple string", "+\r\n", str(SimpleString, "")},
		{"error", "-ERR unknown command 'foo'\r\n", str(SimpleError, "ERR unknown command 'foo'")},
		{"integer", ":1000\r\n", num(1000)},
		{"negative integer", ":-42\r\n", num(-42)},
		{"min int64", ":-9223372036854775808\r\n", num(math.MinInt64)},
		{"bulk", "$5\r\nhello\r\n", bulk("hello")},
		{"empty bulk", "$0\r\n\r\n", bulk("")},
		{"binary bulk with CRLF inside", "$4\r\n\r\n\x00\xff\r\n", bulk("\r\n\x00\xff")},
		{"RESP2 null bulk", "$-1\r\n", Value{Kind: BulkString, Nil: true}},
		{"RESP2 null array", "*-1\r\n", Value{Kind: Array, Nil: true}},
		{"array", "*2\r\n$3\r\nfoo\r\n:1\r\n", agg(Array, bulk("foo"), num(1))},
		{"empty array", "*0\r\n", agg(Array)},
		{"nested array with null element", "*2\r\n*1\r\n+a\r\n$-1\r\n",
			agg(Array, agg(Array, str(SimpleString, "a")), Value{Kind: BulkString, Nil: true})},
		{"null", "_\r\n", Value{Kind: Null}},
		{"double", ",1.23\r\n", Value{Kind: Double, Str: "1.23"}},
		{"double exponent", ",-1.5e-10\r\n", Value{Kind: Double, Str: "-1.5e-10"}},
		{"double inf", ",inf\r\n", Value{Kind: Double, Str: "inf"}},
		{"double -inf", ",-inf\r\n", Value{Kind: Double, Str: "-inf"}},
		{"double nan", ",nan\r\n", Value{Kind: Double, Str: "nan"}},
		{"boolean true", "#t\r\n", Value{Kind: Boolean, Bool: true}},
		{"boolean false", "#f\r\n", Value{Kind: Boolean}},
		{"big number", "(3492890328409238509324850943850943825024385\r\n", str(BigNumber, "3492890328409238509324850943850943825024385")},
		{"negative big number", "(-1\r\n", str(BigNumber, "-1")},
		{"verbatim", "=15\r\ntxt:Some string\r\n", Value{Kind: Verbatim, Format: "txt", Str: "Some string"}},
		{"empty verbatim", "=4\r\nmkd:\r\n", Value{Kind: Verbatim, Format: "mkd"}},
		{"bulk error", "!21\r\nSYNTAX invalid syntax\r\n", str(BulkError, "SYNTAX invalid syntax")},
		{"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
			agg(Map, str(SimpleString, "first"), num(1), str(SimpleString, "second"), num(2))},
		{"empty map", "%0\r\n", agg(Map)},
		{"set", "~3\r\n+a\r\n:1\r\n#f\r\n", agg(Set, str(SimpleString, "a"), num(1), Value{Kind: Boolean})},
		{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", agg(Push, bulk("message"), bulk("ch"), bulk("hi"))},
		{"attribute before a reply", "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.1923\r\n*2\r\n:2039123\r\n:9543892\r\n", withAttr},
		{"attribute before an element", "*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n", nestedAttr},
		{"HELLO 3 reply", "%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n",
			agg(Map, bulk("server"), bulk("redis"), bulk("proto"), num(3))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readAll(t, NewReader(Limits{}), c.in)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.True(t, c.want.Equal(got[0]), "want %v, got %v", c.want, got[0])
			require.Equal(t, c.in, string(got[0].Append(nil)), "Append writes it back as Redis does")

			// Fed one byte at a time, the same value comes out once, at the last byte.
			r := NewReader(Limits{})
			for i := 0; i < len(c.in); i++ {
				r.Feed([]byte{c.in[i]})
				v, ok, err := r.Next()
				require.NoError(t, err)
				require.Equal(t, i == len(c.in)-1, ok, "complete only at the last byte (byte %d)", i)
				if ok {
					require.True(t, c.want.Equal(v))
				}
			}
			require.Zero(t, r.Buffered())
		})
	}
}

func TestReaderValueAccessors(t *testing.T) {
	vs, err := readAll(t, NewReader(Limits{}), ":+7\r\n")
	require.NoError(t, err)
	require.Equal(t, int64(7), vs[0].Int, "RESP3 allows a sign on an integer")
	require.Equal(t, 1.5, Value{Kind: Double, Str: "1.5"}.Float())
	require.True(t, math.IsInf(Value{Kind: Double, Str: "-inf"}.Float(), -1))
	require.True(t, math.IsNaN(Value{Kind: Double, Str: "nan"}.Float()))
	require.Equal(t, "-12345678901234567890123", Value{Kind: BigNumber, Str: "-12345678901234567890123"}.Big().String())
	require.True(t, Value{Kind: BulkString, Nil: true}.IsNull())
	require.True(t, Value{Kind: Null}.IsNull())
	require.True(t, Value{Kind: BulkError}.IsError())
}

// A stream of several messages, cut at every possible point, gives the same messages.
func TestReaderAnyChunking(t *testing.T) {
	in := "+OK\r\n*3\r\n$3\r\nset\r\n%1\r\n+k\r\n|1\r\n+a\r\n:1\r\n,2.5\r\n_\r\n>2\r\n+pubsub\r\n$-1\r\n=7\r\ntxt:abc\r\n:5\r\n"
	whole, err := readAll(t, NewReader(Limits{}), in)
	require.NoError(t, err)
	require.Len(t, whole, 5)
	for cut1 := 0; cut1 <= len(in); cut1++ {
		for cut2 := cut1; cut2 <= len(in); cut2++ {
			r := NewReader(Limits{})
			var got []Value
			for _, part := range []string{in[:cut1], in[cut1:cut2], in[cut2:]} {
				vs, err := readAll(t, r, part)
				require.NoError(t, err)
				got = append(got, vs...)
			}
			require.Len(t, got, len(whole))
			for i := range got {
				require.True(t, whole[i].Equal(got[i]), "cuts %d,%d: message %d", cut1, cut2, i)
			}
		}
	}
}

// Malformed streams are errors, with the offset of the item at fault; the error sticks.
func TestReaderRejectsMalformed(t *testing.T) {
	cases := []struct{ name, in, msg string }{
		{"unknown type byte", "+OK\r\n@x\r\n", `at byte 5: no RESP type starts with '@'`},
		{"bare LF", "+OK\n", "line feed without a carriage return"},
		{"CR without LF", "+O\rK\r\n", "carriage return not followed by a line feed"},
		{"empty line", "\r\n", "empty line"},
		{"integer not a number", ":12a\r\n", `integer "12a"`},
		{"integer overflow", ":9223372036854775808\r\n", "out of range"},
		{"negative bulk length", "$-2\r\n", `length "-2"`},
		{"leading zero length", "$05\r\nhello\r\n", "not a canonical"},
		{"bulk not followed by CRLF", "$3\r\nhelloo\r\n", "not followed by CRLF"},
		{"null map", "%-1\r\n", "a map cannot have length -1"},
		{"streamed string", "$?\r\n;4\r\nHell\r\n;0\r\n", "streamed RESP3 bulk string"},
		{"streamed array", "*?\r\n:1\r\n.\r\n", "streamed RESP3 array"},
		{"bad boolean", "#x\r\n", "boolean"},
		{"bad double", ",1.2.3\r\n", "double"},
		{"hex double", ",0x1p3\r\n", "double"},
		{"bad big number", "(12x\r\n", "big number"},
		{"verbatim without format", "=3\r\nabc\r\n", "verbatim"},
		{"null with body", "_x\r\n", "null with a body"},
		{"two attributes", "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n:3\r\n", "attribute follows another attribute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(Limits{})
			_, err := readAll(t, r, c.in)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.msg)
			var re *Error
			require.ErrorAs(t, err, &re)
			r.Feed([]byte("+OK\r\n"))
			_, ok, err2 := r.Next()
			require.False(t, ok)
			require.Equal(t, err, err2, "the error sticks")
		})
	}
}

// A declared length over a limit is refused at once, before any payload is awaited or kept; a length
// under the limit is awaited without reserving memory for it.
func TestReaderLimits(t *testing.T) {
	lim := Limits{MaxLine: 64, MaxInline: 32, MaxBulk: 100, MaxElements: 10, MaxDepth: 3, MaxMessage: 200}
	cases := []struct{ name, in, msg string }{
		{"huge bulk", "$2147483647\r\n", "Limits.MaxBulk"},
		{"huge bulk length beyond int64", "$99999999999999999999999\r\n", "not a canonical"},
		{"huge array", "*2147483647\r\n", "Limits.MaxElements"},
		{"huge map", "%6\r\n", "Limits.MaxElements"},
		{"elements summed over the message", "*2\r\n*6\r\n*6\r\n", "Limits.MaxElements"},
		{"deep nesting", "*1\r\n*1\r\n*1\r\n*1\r\n", "Limits.MaxDepth"},
		{"long line", "+" + strings.Repeat("a", 70), "Limits.MaxLine"},
		{"long message", "*2\r\n$100\r\n" + strings.Repeat("a", 100) + "\r\n$100\r\n", "Limits.MaxMessage"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readAll(t, NewReader(lim), c.in)
			require.ErrorContains(t, err, c.msg)
		})
	}

	// Under the limits: waiting, not failing, and the next message's budget starts afresh.
	r := NewReader(lim)
	vs, err := readAll(t, r, "$100\r\n")
	require.NoError(t, err)
	require.Empty(t, vs)
	vs, err = readAll(t, r, strings.Repeat("b", 100)+"\r\n*2\r\n$90\r\n"+strings.Repeat("c", 90)+"\r\n:1\r\n")
	require.NoError(t, err)
	require.Len(t, vs, 2)

	// The command reader bounds inline commands.
	_, err = readAll(t, NewCommandReader(lim), strings.Repeat("x", 40))
	require.ErrorContains(t, err, "Limits.MaxInline")
}
