package resp

import (
	"math"
	"strconv"
	"testing"
)

// fuzzLimits are small, so the fuzzer reaches every limit with short inputs.
var fuzzLimits = Limits{MaxLine: 256, MaxInline: 128, MaxBulk: 512, MaxElements: 64, MaxDepth: 8, MaxMessage: 2048}

var seedStreams = []string{
	"+OK\r\n", "-ERR x\r\n", ":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n", "*2\r\n:1\r\n+a\r\n", "_\r\n",
	",1.5\r\n", ",inf\r\n", "#t\r\n", "(123\r\n", "=7\r\ntxt:abc\r\n", "!3\r\nERR\r\n", "%1\r\n+a\r\n:1\r\n",
	"~1\r\n+a\r\n", ">2\r\n+message\r\n+x\r\n", "|1\r\n+a\r\n:1\r\n+b\r\n", "*1\r\n|1\r\n+a\r\n:1\r\n:2\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "PING\r\n", "set k \"a\\x41\" 'b'\n", "\r\n*0\r\n",
	"$2147483647\r\n", "*99999999\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "$?\r\n",
	"+OK", "+O\rK\r\n", "$3\r\nabcd\r\n",
}

// FuzzDecode feeds arbitrary bytes, in chunks the input chooses, to a reply Reader and a command
// Reader. Neither may panic; each must read the same values (or fail at the same offset) however the
// stream is cut; what it keeps is bounded by what it was fed; and every value it reads is written back
// by Append (AppendCommand) into bytes that read as the same value.
func FuzzDecode(f *testing.F) {
	for i, s := range seedStreams {
		f.Add(byte(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, cut byte, data []byte) {
		for _, commands := range []bool{false, true} {
			whole, wholeErr := decodeChunked(commands, data, len(data)+1)
			parts, partsErr := decodeChunked(commands, data, int(cut%16)+1)
			if (wholeErr == nil) != (partsErr == nil) || (wholeErr != nil && wholeErr.Error() != partsErr.Error()) {
				t.Fatalf("commands=%v: whole stream: %v; in chunks of %d: %v", commands, wholeErr, cut%16+1, partsErr)
			}
			if len(whole) != len(parts) {
				t.Fatalf("commands=%v: %d values whole, %d in chunks", commands, len(whole), len(parts))
			}
			kept := 0
			for i, v := range whole {
				if !v.Equal(parts[i]) {
					t.Fatalf("value %d: %v whole, %v in chunks", i, v, parts[i])
				}
				kept += footprint(v)
				var enc []byte
				if commands {
					args := make([]string, len(v.Elems))
					for k, e := range v.Elems {
						args[k] = e.Str
					}
					enc = AppendCommand(nil, args...)
				} else {
					enc = v.Append(nil)
				}
				again, err := decodeChunked(commands, enc, len(enc)+1)
				if err != nil || len(again) != 1 || !again[0].Equal(v) {
					t.Fatalf("value %v written as %q reads back as %v (%v)", v, enc, again, err)
				}
			}
			if kept > 8*len(data)+64 {
				t.Fatalf("%d bytes of input gave values of footprint %d", len(data), kept)
			}
		}
	})
}

// decodeChunked decodes data fed in chunks of size n.
func decodeChunked(commands bool, data []byte, n int) ([]Value, error) {
	return decodeWith(fuzzLimits, commands, data, n)
}

// decodeWith is decodeChunked with the given limits.
func decodeWith(lim Limits, commands bool, data []byte, n int) ([]Value, error) {
	r := NewReader(lim)
	if commands {
		r = NewCommandReader(lim)
	}
	var out []Value
	for off := 0; off < len(data); off += n {
		r.Feed(data[off:min(off+n, len(data))])
		if r.Buffered() > len(data) {
			panic("reader keeps more than it was fed")
		}
		for {
			v, ok, err := r.Next()
			if err != nil {
				return out, err
			}
			if !ok {
				break
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// footprint is what a value holds in memory, in units comparable to wire bytes: its strings, and a
// few bytes per element slot (each element took at least three bytes on the wire).
func footprint(v Value) int {
	n := len(v.Str) + len(v.Format) + 2*cap(v.Elems)
	for _, e := range v.Elems {
		n += footprint(e)
	}
	if v.Attr != nil {
		n += footprint(*v.Attr)
	}
	return n
}

// FuzzRoundTrip builds a well-formed value from the fuzzer's bytes and checks that it reads back from
// its wire form unchanged, whole and one byte at a time.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range seedStreams {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		v := g.value(0)
		enc := v.Append(nil)
		for _, n := range []int{len(enc) + 1, 1} {
			got, err := decodeWith(Limits{}, false, enc, n)
			if err != nil || len(got) != 1 || !got[0].Equal(v) {
				t.Fatalf("%s written as %q reads back as %v (%v)", v.String(), enc, got, err)
			}
		}
		args := make([]string, 1+int(g.byte()%4))
		for i := range args {
			args[i] = g.text(false)
		}
		got, err := decodeChunked(true, AppendCommand(nil, args...), 1)
		if err != nil || len(got) != 1 || len(got[0].Elems) != len(args) {
			t.Fatalf("command %q reads back as %v (%v)", args, got, err)
		}
		for i, e := range got[0].Elems {
			if e.Str != args[i] {
				t.Fatalf("command %q: argument %d reads back as %q", args, i, e.Str)
			}
		}
	})
}

// gen draws a value from bytes; past their end it draws zeros, which end every aggregate.
type gen struct {
	b []byte
	i int
}

func (g *gen) byte() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

// text draws a short string; a simple one has no CR or LF.
func (g *gen) text(simple bool) string {
	s := make([]byte, int(g.byte()%12))
	for i := range s {
		s[i] = g.byte()
		if simple && (s[i] == '\r' || s[i] == '\n') {
			s[i] = ' '
		}
	}
	return string(s)
}

var genKinds = []Kind{SimpleString, SimpleError, Integer, BulkString, Null, Double, Boolean, BigNumber, BulkError,
	Verbatim, Array, Map, Set, Push}

func (g *gen) value(depth int) Value {
	k := genKinds[int(g.byte())%len(genKinds)]
	if depth >= 4 && (k == Array || k == Map || k == Set || k == Push) {
		k = Integer
	}
	v := Value{Kind: k}
	switch k {
	case SimpleString, SimpleError:
		v.Str = g.text(true)
	case BulkString, BulkError:
		if k == BulkString && g.byte()%8 == 0 {
			v.Nil = true
		} else {
			v.Str = g.text(false)
		}
	case Verbatim:
		v.Format = []string{"txt", "mkd", "a:b"}[g.byte()%3]
		v.Str = g.text(false)
	case Integer:
		v.Int = int64(uint64(g.byte())<<56 | uint64(g.byte())<<8 | uint64(g.byte()))
	case Boolean:
		v.Bool = g.byte()%2 == 1
	case BigNumber:
		v.Str = strconv.Itoa(int(g.byte())-128) + strconv.Itoa(int(g.byte()))
	case Double:
		var bits uint64
		for i := 0; i < 8; i++ {
			bits = bits<<8 | uint64(g.byte())
		}
		f := math.Float64frombits(bits)
		switch {
		case math.IsNaN(f):
			v.Str = "nan"
		case math.IsInf(f, 1):
			v.Str = "inf"
		case math.IsInf(f, -1):
			v.Str = "-inf"
		default:
			v.Str = strconv.FormatFloat(f, 'g', -1, 64)
		}
	case Array, Set, Push, Map:
		if k == Array && g.byte()%8 == 0 {
			v.Nil = true
			break
		}
		n := int(g.byte() % 4)
		if k == Map {
			n *= 2
		}
		v.Elems = make([]Value, n)
		for i := range v.Elems {
			v.Elems[i] = g.value(depth + 1)
		}
	}
	if g.byte()%6 == 1 {
		a := Value{Kind: Attribute, Elems: []Value{g.value(depth + 1), g.value(depth + 1)}}
		a.Elems[0].Attr, a.Elems[1].Attr = nil, nil
		v.Attr = &a
	}
	return v
}
