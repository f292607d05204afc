package chaos_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/chaos"
)

// A fault on a fan-out reaches every link in it, and Heal heals them all.
func TestFanoutAppliesToEveryLink(t *testing.T) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() { // echo
					buf := make([]byte, 64)
					for {
						n, err := c.Read(buf)
						if err != nil {
							return
						}
						_, _ = c.Write(buf[:n])
					}
				}()
			}
		}()
		addrs = append(addrs, l.Addr().String())
	}
	p := chaos.NewEmbedded(1)
	t.Cleanup(func() { _ = p.Close() })
	var links []chaos.Link
	for i, a := range addrs {
		l, err := p.NewLink("fan-"+string(rune('a'+i)), a)
		require.NoError(t, err)
		links = append(links, l)
	}
	f := chaos.Fanout(links...)
	require.Equal(t, links[0].Addr(), f.Addr())
	echo := func(addr string) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		_, err = c.Read(make([]byte, 1))
		return err
	}
	for _, l := range links {
		require.NoError(t, echo(l.Addr()))
	}
	require.NoError(t, f.Partition())
	for _, l := range links {
		require.Error(t, echo(l.Addr()), "a partition of the fan-out cuts %s", l.Addr())
	}
	require.NoError(t, f.Heal())
	for _, l := range links {
		require.NoError(t, echo(l.Addr()))
	}
}
