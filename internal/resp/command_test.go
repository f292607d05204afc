package resp

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func commands(t *testing.T, in string) ([][]string, error) {
	t.Helper()
	r := NewCommandReader(Limits{})
	r.Feed([]byte(in))
	var out [][]string
	for {
		args, ok, err := r.NextCommand()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, args)
	}
}

func TestCommandReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want [][]string
	}{
		{"multibulk", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", [][]string{{"SET", "k", "v"}}},
		{"binary argument", "*2\r\n$3\r\nGET\r\n$4\r\n\r\n\x00\xff\r\n", [][]string{{"GET", "\r\n\x00\xff"}}},
		{"pipeline", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n", [][]string{{"PING"}, {"GET", "a"}}},
		{"inline", "PING\r\n", [][]string{{"PING"}}},
		{"inline with LF only", "get  a\n", [][]string{{"get", "a"}}},
		{"inline quotes and escapes", `set k "a b\x41\n\"" 'it\'s' "\xzz"` + "\r\n",
			[][]string{{"set", "k", "a bA\n\"", "it's", "xzz"}}},
		{"empty commands are skipped", "\r\n   \r\n*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}},
		{"inline between multibulk", "*1\r\n$5\r\nMULTI\r\nEXEC\r\n", [][]string{{"MULTI"}, {"EXEC"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := commands(t, c.in)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestCommandReaderRejectsMalformed(t *testing.T) {
	cases := []struct{ name, in, msg string }{
		{"integer argument", "*1\r\n:1\r\n", "expected '$'"},
		{"nested array", "*1\r\n*1\r\n$1\r\na\r\n", "expected '$'"},
		{"null argument", "*1\r\n$-1\r\n", "cannot have length -1"},
		{"unbalanced quotes", "set \"a\r\n", "unbalanced quotes"},
		{"text after a closing quote", "set \"a\"b\r\n", "closing quote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := commands(t, c.in)
			require.ErrorContains(t, err, c.msg)
		})
	}
}

// Lengths are claims: a Reader reserves nothing for a payload or for elements before they arrive, so
// a hostile header costs a few bytes, not what it declares.
func TestReaderDoesNotReserveDeclaredLengths(t *testing.T) {
	hostile := []string{
		"$67108864\r\n",                              // a 64 MiB bulk (at the limit), announced only
		"*1048576\r\n",                               // a million elements, none sent
		strings.Repeat("*1048576\r\n", 1),            // the same, as a command reader sees it
		strings.Repeat("*1\r\n", 63) + "%524288\r\n", // deep, then wide
	}
	for _, in := range hostile {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < 100; i++ {
			for _, r := range []*Reader{NewReader(Limits{}), NewCommandReader(Limits{})} {
				r.Feed([]byte(in))
				_, _, _ = r.Next() // "$..." is an inline command to a command reader: complete, and small

			}
		}
		runtime.ReadMemStats(&after)
		perRead := (after.TotalAlloc - before.TotalAlloc) / 200
		require.Less(t, perRead, uint64(64<<10), "%q: %d bytes allocated per read", in[:min(len(in), 20)], perRead)
	}
}
