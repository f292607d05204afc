package chaos

import "testing"

func TestRESPValueLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		bad  bool
	}{
		{in: "", want: 0},
		{in: "+OK\r\n", want: 5},
		{in: "+OK\r\n+OK\r\n", want: 5},
		{in: "+OK", want: 0},
		{in: "-ERR unknown subcommand\r\n", want: 25},
		{in: ":12\r\n", want: 5},
		{in: "$3\r\nabc\r\n", want: 9},
		{in: "$3\r\nab", want: 0},
		{in: "$-1\r\n", want: 5},
		{in: "*2\r\n$1\r\na\r\n:1\r\n", want: 15},
		{in: "*2\r\n$1\r\na\r\n", want: 0},
		{in: "%1\r\n+server\r\n+redis\r\n", want: 21},
		{in: "|1\r\n+k\r\n+v\r\n:1\r\n", want: 16},
		{in: ">2\r\n+message\r\n+x\r\n", want: 18},
		{in: "_\r\n", want: 3},
		{in: "R\x00\x00\x00\x08\r\n", bad: true},
		{in: "$x\r\n", bad: true},
	} {
		n, err := respValueLen([]byte(tc.in))
		if tc.bad {
			if err == nil {
				t.Errorf("%q: want an error, got %d", tc.in, n)
			}
			continue
		}
		if err != nil || n != tc.want {
			t.Errorf("%q: got %d, %v; want %d", tc.in, n, err, tc.want)
		}
	}
}

func TestCommandName(t *testing.T) {
	for in, want := range map[string]string{
		"*2\r\n$5\r\nhello\r\n$1\r\n3\r\n":                   "hello",
		"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$1\r\nx\r\n": "CLIENT",
		"+OK\r\n":      "",
		"*1\r\n:1\r\n": "",
	} {
		if got := commandName([]byte(in)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
