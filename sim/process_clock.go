package sim

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/chaos"
	"github.com/tenurelabs/tenure/history"
)

// A process's clock is changed with Debian's libfaketime, preloaded into the process: every reading of
// the clock through the C library is rewritten from a spec file, read again at every call
// (FAKETIME_NO_CACHE), so the harness changes the rate while the process runs. libfaketime 0.9.10
// computes
//
//	fake(t) = start + offset + rate × (t − start)
//
// with start the moment it loaded (the process's start, near enough) for both the wall clock and the
// monotonic clock. A new rate alone would rescale all the time elapsed since start, so the clock would
// jump; the offset moves with it to keep the clock continuous: offset' = offset + (t − start)(rate −
// rate'). The error of taking the process's start for libfaketime's (a few milliseconds of exec and
// loading) times the change of rate is well under a millisecond.
//
// The clock starts faketimeOffset ahead, which is how POST /ready's clock reading shows whether the
// runtime honours libfaketime at all (selfTest): Go, for one, reads the clock through the vDSO and
// never sees the preload.
const faketimeOffset = time.Hour

// libfaketimePaths are where distributions install libfaketime ($TENURE_LIBFAKETIME first).
var libfaketimePaths = []string{
	"/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1", "/usr/lib64/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// findLibfaketime returns the path of libfaketime, or an error saying how to install it.
func findLibfaketime() (string, error) {
	if p := os.Getenv("TENURE_LIBFAKETIME"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TENURE_LIBFAKETIME=%s: %w", p, err)
		}
		return p, nil
	}
	for _, pat := range libfaketimePaths {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", fmt.Errorf("libfaketime is not installed (apt-get install libfaketime, or set TENURE_LIBFAKETIME to its path): a process system's clock is changed through it")
}

// hasClockFaults reports whether a schedule changes an instance's clock.
func hasClockFaults(s chaos.Schedule) bool {
	for _, st := range s {
		if _, ok := st.Fault.(chaos.Drift); ok {
			return true
		}
	}
	return false
}

// fakeClock is one process's libfaketime spec file.
type fakeClock struct {
	path string

	mu     sync.Mutex
	start  time.Time // when the process was started
	offset float64   // seconds
	rate   float64
	since  time.Duration // run time of the last change of rate
}

func newFakeClock(dir, label string) (*fakeClock, error) {
	f, err := os.CreateTemp(dir, "faketime-"+label+"-*")
	if err != nil {
		return nil, fmt.Errorf("sim: libfaketime spec file: %w", err)
	}
	_ = f.Close()
	c := &fakeClock{path: f.Name(), offset: faketimeOffset.Seconds(), rate: 1}
	return c, c.write()
}

// spec is the file's content: "+3600.000000 x1".
func (c *fakeClock) spec() string {
	return fmt.Sprintf("%+.6f x%s", c.offset, strconv.FormatFloat(c.rate, 'f', -1, 64))
}

// write replaces the spec file in one rename, so a reading process sees the old spec or the new one.
func (c *fakeClock) write() error {
	tmp := c.path + ".new"
	if err := os.WriteFile(tmp, []byte(c.spec()+"\n"), 0o644); err != nil {
		return fmt.Errorf("sim: libfaketime spec file: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("sim: libfaketime spec file: %w", err)
	}
	return nil
}

// environ is what preloads libfaketime (lib) with this spec file; an LD_PRELOAD of the harness's own
// environment is kept after it.
func (c *fakeClock) environ(lib string) []string {
	preload := lib
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += ":" + old
	}
	return []string{"LD_PRELOAD=" + preload, "FAKETIME_TIMESTAMP_FILE=" + c.path, "FAKETIME_NO_CACHE=1", "NO_FAKE_STAT=1"}
}

func (c *fakeClock) started(at time.Time) {
	c.mu.Lock()
	c.start = at
	c.mu.Unlock()
}

// setRate changes the rate at real time now (run time at), keeping the clock continuous.
func (c *fakeClock) setRate(now time.Time, at time.Duration, rate float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.start.IsZero() {
		c.offset += now.Sub(c.start).Seconds() * (c.rate - rate)
	}
	c.rate, c.since = rate, at
	return c.write()
}

// readingAt is what the process's clock reads at real time now, in milliseconds since the Unix epoch:
// start + offset + rate × (now − start), as libfaketime computes it. ok is false before the process
// started.
func (c *fakeClock) readingAt(now time.Time) (ms float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.start.IsZero() {
		return 0, false
	}
	return float64(c.start.UnixNano())/1e6 + c.offset*1e3 + c.rate*float64(now.Sub(c.start))/1e6, true
}

func (c *fakeClock) remove() {
	_ = os.Remove(c.path)
	_ = os.Remove(c.path + ".new")
}

// instanceClockMS is what the instance's wall clock reads at real time now, in milliseconds since the
// Unix epoch, as the harness set it: the harness's own wall clock (one machine, one clock), or under
// libfaketime the spec the harness writes (fakeClock.readingAt), offset and rate. ok is false when it
// is not known (a process not started).
func (p *procInstance) instanceClockMS(now time.Time) (ms float64, ok bool) {
	if p.clock == nil {
		return float64(now.UnixNano()) / 1e6, true
	}
	return p.clock.readingAt(now)
}

// A report's clock reading (clock_ms) is trusted only within these bounds of the instance's clock at
// its receipt. A reading ahead of the clock cannot be: the instance read its clock before it sent the
// report. Within clockAheadTolerance it is put down to the error of the harness's model of a clock under
// libfaketime (libfaketime starts its clock a few milliseconds after the harness notes the process's
// start, an error that a rate other than 1 turns into an offset of a few milliseconds) and taken as
// the receipt; beyond it the reading is nonsense. A reading more than maxReportAge behind is not a
// wall clock in milliseconds at all (seconds, or a monotonic clock): no pause lasts a day.
const (
	clockAheadTolerance = 25 * time.Millisecond
	maxReportAge        = 24 * time.Hour
)

// reportAge is how long before its receipt at real time now, on the instance's clock, the instance
// sent a report that carried clock_ms (nil: none): the time it spent on the way, which a pause of the
// instance between reading its clock and the report's arrival makes long. It is never negative: a
// report without clock_ms, or whose clock_ms is ahead of the instance's clock or cannot be converted,
// is taken as sent at its receipt (age 0, the latest it can have been sent), and problem says why for
// the latter two.
func (p *procInstance) reportAge(now time.Time, clockMS *float64) (age time.Duration, problem string) {
	if clockMS == nil {
		return 0, ""
	}
	inst, ok := p.instanceClockMS(now)
	if !ok {
		return 0, fmt.Sprintf("clock_ms %.0f: the instance's clock is not known yet; valid_ms is counted from the report's receipt", *clockMS)
	}
	ms := inst - *clockMS
	switch {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return 0, fmt.Sprintf("clock_ms %v cannot be read as a clock; valid_ms is counted from the report's receipt", *clockMS)
	case ms < -float64(clockAheadTolerance/time.Millisecond):
		return 0, fmt.Sprintf("clock_ms %.0f is %.0f ms ahead of the instance's clock at the report's receipt (%.0f): it must be the clock when the report was sent; valid_ms is counted from the receipt",
			*clockMS, -ms, inst)
	case ms < 0:
		return 0, ""
	case ms > float64(maxReportAge/time.Millisecond):
		return 0, fmt.Sprintf("clock_ms %.0f is %.0f ms behind the instance's clock at the report's receipt (%.0f): it must be the wall clock in milliseconds since the Unix epoch; valid_ms is counted from the receipt",
			*clockMS, ms, inst)
	}
	return time.Duration(ms * float64(time.Millisecond)), ""
}

// clockSamples are an instance's clock readings (clock_ms of its requests) since the last change of its
// clock's rate, each with the run time it arrived at.
type clockSamples struct {
	at    []time.Duration
	clock []float64 // milliseconds
}

// maxClockSamples bounds the readings kept per period: the first and the latest are what the rate is
// measured from.
const maxClockSamples = 1 << 12

// sample notes a clock reading of the instance (nil: the request carried none).
func (p *procInstance) sample(at time.Duration, clockMS *float64) {
	if clockMS == nil || p.clock == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.samples
	if len(s.at) >= maxClockSamples {
		s.at, s.clock = s.at[:1], s.clock[:1]
	}
	s.at, s.clock = append(s.at, at), append(s.clock, *clockMS)
}

// noteClock records the rate at which the instance's clock ran since the last change, as its readings
// show it (a note), and starts a new period.
func (p *procInstance) noteClock() {
	p.mu.Lock()
	s := p.samples
	p.samples = clockSamples{}
	p.mu.Unlock()
	p.clock.mu.Lock()
	set, since := p.clock.rate, p.clock.since
	p.clock.mu.Unlock()
	n := len(s.at)
	if n < 2 || s.at[n-1]-s.at[0] < 50*time.Millisecond {
		return
	}
	// Noted at the period's last reading: a period that ends with the run is noted after its end.
	p.r.rec.Add(history.Event{Kind: history.KindNote, At: s.at[n-1], Instance: p.in.id,
		Note: fmt.Sprintf("clock of instance %s from %v: ran at %.4f of real time (set %g), from %d readings over %v",
			p.label, max(since, s.at[0]).Round(time.Millisecond), s.rate(), set, n, (s.at[n-1] - s.at[0]).Round(time.Millisecond))})
}

// maxRatePoints bounds the readings the rate is measured from (their pairs are compared).
const maxRatePoints = 64

// rate is the median of the rates between every two readings (the Theil–Sen slope): a reading whose
// request was held up on the way (a loaded machine delays a loopback request by tens of milliseconds)
// moves a few of those rates, not the median.
func (s clockSamples) rate() float64 {
	n := len(s.at)
	step := max(1, n/maxRatePoints)
	var rates []float64
	for i := 0; i < n; i += step {
		for j := i + step; j < n; j += step {
			if dt := float64(s.at[j]-s.at[i]) / float64(time.Millisecond); dt > 0 {
				rates = append(rates, (s.clock[j]-s.clock[i])/dt)
			}
		}
	}
	if len(rates) == 0 {
		return 0
	}
	sort.Float64s(rates)
	m := len(rates)
	if m%2 == 1 {
		return rates[m/2]
	}
	return (rates[m/2-1] + rates[m/2]) / 2
}

// setClockRate changes the process's clock rate through libfaketime.
func (p *procInstance) setClockRate(rate float64) error {
	if p.clock == nil {
		return fmt.Errorf("%w: the clock of process instance %s is not under libfaketime (the run has no clock faults in its schedule)", chaos.ErrUnsupported, p.in.id)
	}
	p.noteClock()
	return p.clock.setRate(time.Now(), p.r.rec.Now(), rate)
}

// selfTest judges the clock reading of POST /ready. Under libfaketime the instance's clock must read
// faketimeOffset ahead of the harness's; a clock that reads the harness's time belongs to a runtime
// that does not honour libfaketime, and clock faults cannot run on it. Half the offset separates the
// two, far more than any start-up takes.
func (p *procInstance) selfTest(rep readyReport) error {
	ahead := time.Duration((rep.clockMS - float64(rep.wall.UnixNano())/1e6) * float64(time.Millisecond))
	if p.clock == nil {
		if ahead > time.Minute || ahead < -time.Minute {
			p.out.harness(fmt.Sprintf("POST /ready: clock_ms %.0f is %v off the harness's clock: it should be the wall clock in milliseconds since the Unix epoch", rep.clockMS, ahead.Round(time.Second)))
		}
		return nil
	}
	off := ahead - faketimeOffset
	switch {
	case off > -faketimeOffset/2 && off < faketimeOffset/2:
		p.r.rec.Add(history.Event{Kind: history.KindNote, At: p.r.rec.Now(), Instance: p.in.id,
			Note: fmt.Sprintf("clock of instance %s is under libfaketime (self-test: its clock read %v ahead, as set)", p.label, ahead.Round(time.Millisecond))})
		return nil
	case ahead > -faketimeOffset/2 && ahead < faketimeOffset/2:
		return fmt.Errorf("instance %s (%s) does not honour libfaketime: its clock at POST /ready read the harness's time, not one hour ahead as libfaketime set it, so its runtime reads the clock without the C library (as Go does); clock scenarios cannot run for %s (declare \"faketime\": false in its system file to have them refused before they start)",
			p.label, p.in.id, p.sys.name)
	}
	return fmt.Errorf("instance %s (%s) reported clock_ms %.0f at POST /ready: %v from the harness's clock, which libfaketime set %v ahead; clock_ms must be the wall clock in milliseconds since the Unix epoch",
		p.label, p.in.id, rep.clockMS, ahead.Round(time.Second), faketimeOffset)
}

// checkProcessPlan refuses, before anything starts, what a process system cannot run: a deployment other
// than one node or independent nodes, a fault that acts inside a client (stall), clock faults for a
// system that declares its runtime does not honour libfaketime, or without libfaketime installed.
func checkProcessPlan(ps *ProcessSystem, backendSpec string, steps chaos.Schedule) error {
	if backendSpec == TopologySentinel || backendSpec == TopologyCluster {
		return fmt.Errorf("%w: %s is a process system, and process systems run on one Redis or on independent nodes, not on a %s deployment", chaos.ErrUnsupported, ps.name, backendSpec)
	}
	var names []string
	for _, st := range steps {
		if _, ok := st.Fault.(chaos.Stall); ok {
			names = append(names, st.Fault.Name())
		}
	}
	if len(names) > 0 {
		return fmt.Errorf("%w: %s is a process system: the %s fault holds calls inside the instance's client, which a process does not share with the harness", chaos.ErrUnsupported, ps.name, strings.Join(names, ", "))
	}
	if !hasClockFaults(steps) {
		return nil
	}
	if !ps.caps.honoursFaketime() {
		return fmt.Errorf("%w: the scenario changes clock rates, and %s declares that its runtime does not honour libfaketime (capabilities.faketime false)", chaos.ErrUnsupported, ps.name)
	}
	if _, err := findLibfaketime(); err != nil {
		return fmt.Errorf("%w: the scenario changes clock rates: %v", chaos.ErrUnsupported, err)
	}
	return nil
}

// prepareFaketime finds libfaketime and makes the directory of the instances' spec files, removed when
// the run ends.
func (r *runner) prepareFaketime(td *teardown) error {
	lib, err := findLibfaketime()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOptions, err)
	}
	dir, err := os.MkdirTemp("", "tenure-faketime-")
	if err != nil {
		return fmt.Errorf("sim: libfaketime spec files: %w", err)
	}
	td.add(func() error { return os.RemoveAll(dir) })
	r.faketime, r.clockDir = lib, dir
	return nil
}
