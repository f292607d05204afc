package readme

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tenurelabs/tenure/internal/redistest"
)

// The README's library examples, run as a newcomer runs them: built from the README's own Go blocks
// (with the Redis address of a private server in place of 127.0.0.1:6379), started as processes, and
// stopped with SIGINT.

// readmeAddr is the Redis address the README's examples are written for.
const readmeAddr = "127.0.0.1:6379"

// exampleBlock returns the Go block of README.md that imports pkg and starts with signal.NotifyContext.
func exampleBlock(t *testing.T, pkg string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	blocks, _ := goBlocks(string(md))
	var found []string
	for _, b := range blocks {
		if strings.Contains(b, `"github.com/tenurelabs/tenure/`+pkg+`"`) && strings.Contains(b, "signal.NotifyContext") {
			found = append(found, b)
		}
	}
	require.Len(t, found, 1, "README.md must have exactly one %s example stopped by signal.NotifyContext", pkg)
	require.Equal(t, 1, strings.Count(found[0], `"`+readmeAddr+`"`), "the %s example must dial %s once", pkg, readmeAddr)
	return found[0]
}

// buildExample builds the README's example of pkg to dial addr and returns the binary.
func buildExample(t *testing.T, pkg, addr string) string {
	t.Helper()
	code := strings.Replace(exampleBlock(t, pkg), `"`+readmeAddr+`"`, `"`+addr+`"`, 1)
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	dir, err := os.MkdirTemp("testdata", "example-")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		_ = os.Remove("testdata") // only when empty
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644))
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	bin := filepath.Join(t.TempDir(), pkg+"-example")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./"+filepath.ToSlash(dir))
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the README's %s example:\n%s", pkg, out)
	return bin
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// example is one running example process.
type example struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// startExample starts bin with args; it is killed when the test ends, and with the test's process.
func startExample(t *testing.T, bin string, args ...string) *example {
	t.Helper()
	p := &example{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// waitFor waits until the output matches re and returns the first submatch (or the match).
func (p *example) waitFor(t *testing.T, re string, within time.Duration) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for {
		if m := rx.FindStringSubmatch(p.out.String()); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-p.exited:
			t.Fatalf("the example exited (%v) before printing %q:\n%s", p.err, re, p.out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the example printed no %q within %s:\n%s", re, within, p.out.String())
		}
	}
}

// interrupt sends SIGINT, as Ctrl-C does, and waits for a clean exit.
func (p *example) interrupt(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	p.awaitExit(t)
}

// awaitExit waits for a clean exit after a SIGINT sent once (a second one, as a second Ctrl-C, may find
// the default action restored while the program winds down, and kill it).
func (p *example) awaitExit(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		require.NoError(t, p.err, "the example's exit after SIGINT:\n%s", p.out.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("the example did not exit within 10 s of SIGINT:\n%s", p.out.String())
	}
	require.NotContains(t, strings.ToLower(p.out.String()), "crash", "an ordinary Ctrl-C is not a crash")
}

// handoffBound is how soon after SIGINT a standby must lead: the process's Stop, one release and its
// notification, and the standby's acquire, each a loopback round trip, on a loaded machine.
const handoffBound = 100 * time.Millisecond

// TestReadmeElectionHandsOverOnSIGINT runs the README's election example twice against one Redis,
// interrupts the leader with SIGINT as Ctrl-C does, and measures how long until Redis names the
// standby leader; three rounds, a new standby each time.
func TestReadmeElectionHandsOverOnSIGINT(t *testing.T) {
	srv := redistest.Start(t)
	bin := buildExample(t, "election", srv.Addr())
	role := regexp.MustCompile(`cfg\.Role = "([^"]+)"`).FindStringSubmatch(exampleBlock(t, "election"))
	require.NotNil(t, role, "the election example names its role")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	key := "election:{" + role[1] + "}:leader"
	holder := func() string { // the instance in "<term>:<nonce>:<instance>", or ""
		v, _ := c.Get(context.Background(), key).Result()
		if parts := strings.SplitN(v, ":", 3); len(parts) == 3 {
			return parts[2]
		}
		return ""
	}

	leader := startExample(t, bin, "-first-deploy")
	leader.waitFor(t, `leading, term \d+`, 10*time.Second)
	id := holder()
	require.NotEmpty(t, id)
	for round := range 3 {
		standby := startExample(t, bin)
		standby.waitFor(t, `leader is `+regexp.QuoteMeta(id), 10*time.Second)
		sent := time.Now()
		require.NoError(t, leader.cmd.Process.Signal(os.Interrupt))
		var next string
		for next = holder(); next == "" || next == id; next = holder() {
			require.Less(t, time.Since(sent), 10*time.Second, "round %d: no new leader", round)
		}
		took := time.Since(sent)
		t.Logf("round %d: %s leads %s after SIGINT to %s", round, next, took.Round(100*time.Microsecond), id)
		require.Less(t, took, handoffBound, "round %d: the standby leads within %s of Ctrl-C", round, handoffBound)
		leader.awaitExit(t)
		require.Contains(t, leader.out.String(), "election released")
		standby.waitFor(t, `leading, term \d+`, time.Second)
		leader, id = standby, next
	}
	leader.interrupt(t)
}

// TestReadmeExamplesShowProgress: on a fresh Redis each library example shows, within 10 s, either its
// work (with -first-deploy, the flag the README gives for a first try) or when and why it waits.
func TestReadmeExamplesShowProgress(t *testing.T) {
	for _, tc := range []struct{ pkg, work string }{
		{"lease", `polling endpoint=ep-\d`},
		{"election", `leading, term \d+`},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			srv := redistest.Start(t)
			bin := buildExample(t, tc.pkg, srv.Addr())
			p := startExample(t, bin)
			p.waitFor(t, `fresh dataset.* until \d|until \d.*: fresh dataset`, 10*time.Second)
			p.interrupt(t)

			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer c.Close()
			require.NoError(t, c.FlushAll(context.Background()).Err(), "a fresh dataset again (the server is this test's own)")
			p = startExample(t, bin, "-first-deploy")
			p.waitFor(t, tc.work, 10*time.Second)
			p.interrupt(t)
		})
	}
}
