package sim

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/resp"
)

// cannedServer answers the i-th command that is not connection set-up with replies[i], and set-up
// (HELLO, CLIENT) with an error, so that a client falls back to its defaults.
func cannedServer(t *testing.T, replies []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		next := 0
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				rd := resp.NewCommandReader(resp.Limits{})
				buf := make([]byte, 4096)
				for {
					n, err := conn.Read(buf)
					if err != nil {
						return
					}
					rd.Feed(buf[:n])
					for {
						args, ok, err := rd.NextCommand()
						if err != nil || !ok {
							break
						}
						out := "-ERR unknown command\r\n"
						if name := strings.ToLower(args[0]); name != "hello" && name != "client" {
							out = replies[next%len(replies)]
							next++
						}
						if _, err := conn.Write([]byte(out)); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// plain renders errors by their text, so that go-redis's and the recorder's error values compare.
func plain(v any) any {
	switch x := v.(type) {
	case error:
		return "error: " + x.Error()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[any]any:
		out := map[any]any{}
		for k, e := range x {
			out[plain(k)] = plain(e)
		}
		return out
	}
	return v
}

// A reply read at the wire is handed to classifiers as go-redis's generic command hands it: the
// same values, of the same Go types, for every RESP2 and RESP3 type.
func TestReplyOfValueIsWhatGoRedisReads(t *testing.T) {
	t.Parallel()
	replies := []string{
		"+OK\r\n", "-ERR bad\r\n", ":42\r\n", "$5\r\nhello\r\n", "$-1\r\n", "*-1\r\n", "_\r\n",
		"*3\r\n:1\r\n$-1\r\n-ERR inner\r\n", ",3.25\r\n", ",inf\r\n", "#t\r\n", "#f\r\n",
		"(123456789012345678901234567890\r\n", "=8\r\ntxt:abcd\r\n", "!5\r\nOOPS!\r\n",
		"%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*1\r\n_\r\n", "~2\r\n+x\r\n+y\r\n", "|1\r\n+ttl\r\n:5\r\n:7\r\n",
		"*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n%1\r\n+n\r\n,1.5\r\n",
	}
	cl := redis.NewClient(&redis.Options{Addr: cannedServer(t, replies), Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { _ = cl.Close() })
	ctx := context.Background()
	for _, raw := range replies {
		t.Run(strings.TrimSpace(raw[:min(len(raw), 12)]), func(t *testing.T) {
			want, wantErr := cl.Do(ctx, "x").Result()
			rd := resp.NewReader(resp.Limits{})
			rd.Feed([]byte(raw))
			v, ok, err := rd.Next()
			require.NoError(t, err)
			require.True(t, ok)
			got, gotErr := replyOfValue(v)
			require.Equal(t, plain(want), plain(got))
			require.Equal(t, wantErr == nil, gotErr == nil)
			if wantErr != nil {
				require.Equal(t, wantErr.Error(), gotErr.Error())
				require.Equal(t, errors.Is(wantErr, redis.Nil), errors.Is(gotErr, redis.Nil))
				require.Equal(t, isServerError(wantErr), isServerError(gotErr), "judged alike by the recorder")
			}
		})
	}
}
