package memnet

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func TestWritesAreBufferedAndReadInOrder(t *testing.T) {
	a, b := Pipe("a", "b")
	defer a.Close()
	defer b.Close()
	// Nobody reads yet: a buffered connection takes the writes anyway (net.Pipe would block here).
	for i := 0; i < 10; i++ {
		if _, err := a.Write([]byte{byte('0' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 4)
	var got []byte
	for len(got) < 10 {
		n, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "0123456789" {
		t.Fatalf("read %q, want 0123456789", got)
	}
	if a.RemoteAddr().String() != "b" || b.RemoteAddr().String() != "a" || a.LocalAddr().Network() != "mem" {
		t.Fatalf("addresses: %v %v %v", a.RemoteAddr(), b.RemoteAddr(), a.LocalAddr().Network())
	}
}

func TestAPartialReadKeepsTheRestOfAChunk(t *testing.T) {
	a, b := Pipe("a", "b")
	defer a.Close()
	defer b.Close()
	_, _ = a.Write([]byte("hello"))
	buf := make([]byte, 2)
	var got []byte
	for len(got) < 5 {
		n, err := b.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "hello" {
		t.Fatalf("read %q", got)
	}
}

func TestCloseDeliversWhatWasQueuedThenEOF(t *testing.T) {
	a, b := Pipe("a", "b")
	_, _ = a.Write([]byte("last words"))
	_ = a.Close()
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "last words" {
		t.Fatalf("ReadAll = %q, %v; want the queued data, then EOF", got, err)
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Fatal("a write to a closed peer succeeded")
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed end: %v, want net.ErrClosed", err)
	}
}

func TestReadDeadline(t *testing.T) {
	a, b := Pipe("a", "b")
	defer a.Close()
	defer b.Close()
	_ = b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := b.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past its deadline: %v, want a timeout", err)
	}
	// A deadline moved while a read waits is the one it keeps: cleared, the read waits for data.
	_ = b.SetReadDeadline(time.Now().Add(time.Hour))
	done := make(chan error, 1)
	go func() {
		_, err := b.Read(make([]byte, 1))
		done <- err
	}()
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read after its deadline was brought forward: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a read kept waiting after its deadline was brought forward")
	}
}
