package simcli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// A campaign in virtual time uses every core: a bubble's clock is the process's to move, one bubble at a
// time (internal/bubble), so the campaign starts a worker process per core (--parallel, default the
// number of CPUs) and hands each its jobs one by one. A worker is this program run as
// 'virtual-worker -- CAMPAIGN ARGS...': it plans the same campaign from the same arguments (so job k
// is the same job in both), then reads "k<TAB>dir" lines on its standard input, runs job k into dir as
// the campaign itself would (runOne), and answers one JSON line (workerReply). The parent records and
// prunes the runs, and writes the campaign's outputs, as for a campaign in real time. A worker runs on
// one core (GOMAXPROCS=1) with a lazier garbage collector (GOGC=400, unless set), dies with the
// campaign (Pdeathsig), and one that dies is replaced, its job reported as an error.

// virtualWorkerCmd is the hidden command a worker process runs.
const virtualWorkerCmd = "virtual-worker"

// workerReply is a worker's answer for one job.
type workerReply struct {
	Job      int    `json:"job"`
	Scenario string `json:"scenario,omitempty"` // set when the run produced a history
	Err      string `json:"err,omitempty"`
	// Judged is when the run's verdict was known (Unix nanoseconds), before its reports were written.
	Judged int64 `json:"judged,omitempty"`
}

// virtualWorkerMain serves jobs of the campaign args describe, read from stdin, until stdin closes.
func virtualWorkerMain(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) (int, error) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	jobs, err := newLazyCampaign(args)
	if err != nil {
		return ExitUsage, err
	}
	keep := jobs.f.keep
	in := bufio.NewScanner(stdin)
	enc := json.NewEncoder(stdout)
	for in.Scan() {
		var k int
		var dir string
		line := in.Text()
		idx, d, ok := strings.Cut(line, "\t")
		if _, err := fmt.Sscanf(idx, "%d", &k); err != nil || !ok || k < 0 || k >= jobs.len() {
			return ExitUsage, fmt.Errorf("virtual worker: bad job line %q", line)
		}
		dir = d
		j, err := jobs.job(k)
		if err != nil {
			return ExitUsage, fmt.Errorf("virtual worker: %w", err)
		}
		j.dir, j.col, j.lean = dir, nil, !keep
		row, _, rerr := runOne(ctx, j, true, io.Discard, io.Discard)
		rep := workerReply{Job: k, Scenario: row.scenario}
		if !row.judged.IsZero() {
			rep.Judged = row.judged.UnixNano()
		}
		if rerr != nil {
			rep.Err = rerr.Error()
		}
		if err := enc.Encode(rep); err != nil {
			return ExitUsage, err
		}
	}
	return ExitOK, in.Err()
}

// worker is one worker process, started on first use.
type worker struct {
	args []string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	errs *tailBuffer
}

// run has the worker run job k into dir, starting (or replacing) its process as needed.
func (w *worker) run(k int, dir string) (workerReply, error) {
	if w.cmd == nil {
		if err := w.start(); err != nil {
			return workerReply{}, err
		}
	}
	if _, err := fmt.Fprintf(w.in, "%d\t%s\n", k, dir); err != nil {
		return workerReply{}, w.died(err)
	}
	if !w.out.Scan() {
		return workerReply{}, w.died(w.out.Err())
	}
	var rep workerReply
	if err := json.Unmarshal(w.out.Bytes(), &rep); err != nil || rep.Job != k {
		return workerReply{}, w.died(fmt.Errorf("unreadable answer %q", w.out.Text()))
	}
	return rep, nil
}

// died ends a worker process that failed, and says what it wrote last.
func (w *worker) died(err error) error {
	w.stop()
	msg := "virtual worker process ended"
	if err != nil {
		msg += ": " + err.Error()
	}
	if t := strings.TrimSpace(w.errs.String()); t != "" {
		msg += "; its last output: " + t
	}
	return errors.New(msg)
}

func (w *worker) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, append([]string{virtualWorkerCmd, "--"}, w.args...)...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	if os.Getenv("GOGC") == "" {
		cmd.Env = append(cmd.Env, "GOGC=400")
	}
	w.errs = &tailBuffer{max: 4096}
	cmd.Stderr = w.errs
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := spawnWorker(cmd); err != nil {
		return fmt.Errorf("start a virtual worker process: %w", err)
	}
	w.cmd, w.in = cmd, in
	w.out = bufio.NewScanner(out)
	w.out.Buffer(make([]byte, 64<<10), 16<<20)
	return nil
}

// stop ends the worker's process: its input closes, and a process that does not end is killed.
func (w *worker) stop() {
	if w.cmd == nil {
		return
	}
	_ = w.in.Close()
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
	w.cmd = nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Worker processes are forked from one goroutine locked to its thread for the life of the program:
// Pdeathsig fires when the forking thread ends, and this one never does.
var (
	spawnOnce sync.Once
	spawns    chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func spawnWorker(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnReq)
		go func() {
			runtime.LockOSThread()
			for r := range spawns {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawns <- r
	return <-r.done
}

// lazyCampaign plans a campaign's jobs one at a time, as they are asked for: job k is what
// planCampaign would put at index k (scenario k / len(seeds), seed k % len(seeds)), without planning
// the others. A worker, and the explorer, which may be given 100,000 seeds, start at once with it.
type lazyCampaign struct {
	f     campaignFlags
	names []string
	seeds []int64
	per   int // jobs per seed
	seed  int64
	cache []job // the jobs of seed
}

// newLazyCampaign reads the campaign args describe, checking them as planCampaign does on the first
// seed.
func newLazyCampaign(args []string) (*lazyCampaign, error) {
	l := &lazyCampaign{}
	fs := newCampaignFlagSet(&l.f)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, flagError("campaign", fs, err)
	}
	l.f.run.visit(fs)
	l.names = names
	if l.f.run.set["seed-range"] {
		lo, hi, err := parseSeedRange(l.f.seedRange)
		if err != nil {
			return nil, fmt.Errorf("%w: --seed-range: %v", errUsage, err)
		}
		for s := lo; s <= hi; s++ {
			l.seeds = append(l.seeds, s)
		}
	} else {
		n := l.f.seeds
		if n == 0 {
			n = defaultCampaignSeeds
		}
		if !l.f.run.set["campaign-seed"] {
			return nil, fmt.Errorf("%w: a worker needs the campaign's --campaign-seed", errUsage)
		}
		l.seeds = drawSeeds(l.f.campaignSeed, n)
	}
	js, err := l.plan(l.seeds[0])
	if err != nil {
		return nil, err
	}
	l.per = len(js)
	return l, nil
}

func (l *lazyCampaign) plan(seed int64) ([]job, error) {
	if l.cache != nil && l.seed == seed {
		return l.cache, nil
	}
	l.f.run.parallelSet = false
	l.f.run.seed, l.f.run.seedSet = seed, true
	js, _, err := plan(&l.f.run, l.names)
	if err != nil {
		return nil, err
	}
	l.seed, l.cache = seed, js
	return js, nil
}

// len is the number of jobs.
func (l *lazyCampaign) len() int { return l.per * len(l.seeds) }

// job plans job k.
func (l *lazyCampaign) job(k int) (job, error) {
	if k < 0 || k >= l.len() {
		return job{}, fmt.Errorf("job %d of %d", k, l.len())
	}
	js, err := l.plan(l.seeds[k%len(l.seeds)])
	if err != nil {
		return job{}, err
	}
	if len(js) != l.per {
		return job{}, fmt.Errorf("seed %d plans %d jobs, not %d", l.seeds[k%len(l.seeds)], len(js), l.per)
	}
	return js[k/len(l.seeds)], nil
}
