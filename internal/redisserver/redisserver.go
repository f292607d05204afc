// Package redisserver starts a private redis-server for tests and for the harness: on a free loopback port,
// in its own temporary directory, dying with its parent. Persistence is off unless asked for (RDB
// snapshots or an AOF fsynced every second). The server can be stopped, killed, paused (SIGSTOP),
// resumed, restarted on the same port with an empty dataset, and (with persistence) killed and started
// again loading what its files hold: the faults the harness injects.
package redisserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoBinary is returned when no redis-server executable can be found.
var ErrNoBinary = errors.New("redisserver: redis-server not found on PATH (install it: apt-get install redis-server, or brew install redis)")

// Options configure a server. The zero value is usable.
type Options struct {
	// Binary is the redis-server executable; default: "redis-server" from PATH.
	Binary string
	// Port to listen on; 0 picks a free one.
	Port int
	// StartTimeout bounds the wait for the first PONG; default 10s.
	StartTimeout time.Duration
	// Args are extra arguments appended to the command line (e.g. "--maxmemory", "10mb").
	Args []string
	// Persistence is what the server keeps on disk: "none" (the default when empty), "rdb" (snapshots
	// at redis-server's default save points, and on SAVE) or "aof" (an append-only file fsynced every
	// second, as appendfsync everysec).
	Persistence string
	// Config, when set, is the content of a configuration file written into the server's directory
	// (as redis.conf) and named first on the command line; Args and the options above still override
	// it. The file is written once: a restart keeps what the server rewrote into it (a sentinel records
	// its state there, as a real one does across restarts).
	Config string
	// Sentinel runs the server in sentinel mode (redis-server CONFIG --sentinel); it needs a Config
	// with at least one "sentinel monitor" line, and a sentinel keeps no dataset.
	Sentinel bool
}

// Persistence modes a server can run with.
const (
	PersistNone = "none"
	PersistRDB  = "rdb"
	PersistAOF  = "aof"
)

// PersistenceModes lists the valid values of Options.Persistence.
var PersistenceModes = []string{PersistNone, PersistRDB, PersistAOF}

// CheckPersistence reports whether mode is a valid Options.Persistence ("" counts as none).
func CheckPersistence(mode string) error {
	switch mode {
	case "", PersistNone, PersistRDB, PersistAOF:
		return nil
	}
	return fmt.Errorf("redisserver: unknown persistence %q (valid: %s)", mode, strings.Join(PersistenceModes, ", "))
}

// File names inside the server's directory. A restart that loads data uses the same directory and
// names, so it loads exactly what a real Redis restarted with the same configuration would.
const (
	rdbFile = "dump.rdb"
	aofFile = "appendonly.aof"
	aofDir  = "appendonlydir" // redis-server 7's default appenddirname
)

// Server is a running (or stopped) private redis-server.
type Server struct {
	opts Options
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	closed bool
}

// Available reports whether a redis-server binary can be found, and its path.
func Available() (string, bool) {
	p, err := exec.LookPath("redis-server")
	return p, err == nil
}

// Start launches a server and waits until it answers PING.
func Start(opts Options) (*Server, error) {
	bin := opts.Binary
	if bin == "" {
		p, ok := Available()
		if !ok {
			return nil, ErrNoBinary
		}
		bin = p
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	if err := CheckPersistence(opts.Persistence); err != nil {
		return nil, err
	}
	if opts.Persistence == "" {
		opts.Persistence = PersistNone
	}
	dir, err := os.MkdirTemp("", "tenure-redis-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: temp dir: %w", err)
	}
	// redis-server changes into --dir before it opens --logfile: a relative path (from a relative
	// TMPDIR) would be looked up inside itself.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	} else {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redisserver: temp dir %s: %w", dir, err)
	}
	s := &Server{opts: opts, bin: bin, dir: dir, port: opts.Port}
	// A free port can be taken between our probe and redis's bind: try a few.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if opts.Port == 0 {
			p, err := FreePort()
			if err != nil {
				lastErr = err
				continue
			}
			s.port = p
		}
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
		if opts.Port != 0 {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// confFile is the name of the configuration file written from Options.Config.
const confFile = "redis.conf"

func (s *Server) launch() error {
	var args []string
	if s.opts.Config != "" || s.opts.Sentinel {
		conf := filepath.Join(s.dir, confFile)
		if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(conf, []byte(s.opts.Config), 0o600); err != nil {
				return fmt.Errorf("redisserver: write %s: %w", conf, err)
			}
		}
		args = append(args, conf)
	}
	if s.opts.Sentinel {
		args = append(args, "--sentinel")
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--dbfilename", rdbFile,
		"--appendfilename", aofFile,
		"--daemonize", "no",
		"--protected-mode", "no",
		"--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log"),
	)
	switch s.opts.Persistence {
	case PersistRDB:
		// redis-server's own default save points.
		args = append(args, "--save", "3600 1 300 100 60 10000", "--appendonly", "no")
	case PersistAOF:
		args = append(args, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec")
	default:
		args = append(args, "--save", "", "--appendonly", "no")
	}
	args = append(args, s.opts.Args...)
	cmd := exec.Command(s.bin, args...)
	// Die with the parent, even when the parent is SIGKILLed; own process group so Ctrl-C in a
	// terminal reaches the harness first and the harness decides when the server stops.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()

	deadline := time.Now().Add(s.opts.StartTimeout)
	for {
		if err := ping(s.Addr(), 200*time.Millisecond); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redisserver: redis-server exited during start on port %d: %s", s.port, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redisserver: redis-server on port %d did not answer PING within %s: %s", s.port, s.opts.StartTimeout, s.logTail())
		}
	}
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil || len(b) == 0 {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

func ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Addr returns host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Sentinel reports whether the server runs in sentinel mode.
func (s *Server) Sentinel() bool { return s.opts.Sentinel }

// Dir is the server's working directory, where its RDB and AOF files live.
func (s *Server) Dir() string { return s.dir }

// Port returns the listening port.
func (s *Server) Port() int { return s.port }

// Running reports whether the process is alive (paused counts as alive).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: not running")
	}
	select {
	case <-s.exited:
		return errors.New("redisserver: not running")
	default:
	}
	return s.cmd.Process.Signal(sig)
}

// Pause freezes the server (SIGSTOP): connections stay open, nothing is answered.
func (s *Server) Pause() error {
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
	return nil
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error {
	if err := s.signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
	return nil
}

// Kill ends the server with SIGKILL and waits for it to exit. The dataset is lost.
func (s *Server) Kill() error { return s.end(syscall.SIGKILL, 5*time.Second) }

// Stop ends the server with SIGTERM (SIGKILL if it does not exit within 5s) and waits.
func (s *Server) Stop() error { return s.end(syscall.SIGTERM, 5*time.Second) }

func (s *Server) end(sig syscall.Signal, grace time.Duration) error {
	s.mu.Lock()
	cmd, exited, paused := s.cmd, s.exited, s.paused
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
	return nil
}

// Persistence returns what the server keeps on disk: "none", "rdb" or "aof".
func (s *Server) Persistence() string { return s.opts.Persistence }

// Save writes an RDB snapshot now (SAVE) and waits for it. A later Reload of an "rdb" server loads it.
func (s *Server) Save() error {
	c, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
	if err != nil {
		return fmt.Errorf("redisserver: SAVE: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("SAVE\r\n")); err != nil {
		return fmt.Errorf("redisserver: SAVE: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("redisserver: SAVE: %w", err)
	}
	if !strings.HasPrefix(line, "+OK") {
		return fmt.Errorf("redisserver: SAVE: %s", strings.TrimSpace(line))
	}
	return nil
}

// Restart kills the server and starts a new one on the same port with an empty dataset, as after a crash
// of a Redis without persistence: whatever files the server wrote are removed first.
func (s *Server) Restart() error { return s.restart(true) }

// Reload kills the server (SIGKILL, as a crash) and starts it again on the same port, in the same
// directory with the same file names, so that it loads what its files hold: the AOF when persistence is
// "aof", else the last RDB snapshot (none, on a server that never saved).
func (s *Server) Reload() error { return s.restart(false) }

func (s *Server) restart(empty bool) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("redisserver: closed")
	}
	if err := s.Kill(); err != nil {
		return err
	}
	if empty {
		for _, f := range []string{rdbFile, aofFile, aofDir} {
			if err := os.RemoveAll(filepath.Join(s.dir, f)); err != nil {
				return fmt.Errorf("redisserver: remove %s: %w", f, err)
			}
		}
	}
	var err error
	// The port can linger briefly after a kill; retry the bind for a short while.
	for i := 0; i < 20; i++ {
		if err = s.launch(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// Start starts a server that was stopped or killed, on the same port.
func (s *Server) Start() error {
	if s.Running() {
		return nil
	}
	return s.Restart()
}

// Close kills the server and removes its directory. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.Kill()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Version runs the binary with --version and returns its first line.
func Version(ctx context.Context, bin string) (string, error) {
	if bin == "" {
		p, ok := Available()
		if !ok {
			return "", ErrNoBinary
		}
		bin = p
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), nil
}
