package bubble

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// A goroutine waiting on a sync.Mutex is not idle to testing/synctest: the runtime cannot know that
// the mutex will be let go of by a goroutine of the bubble, so the bubble's clock stands still while
// one waits. Code that holds a mutex across a wait for time (go-redis's PubSub holds its lock across
// the dial and handshake of a reconnection, which a partition or a latency makes last until a
// timeout) then hangs the bubble for good as soon as a second goroutine asks for the lock: the holder
// waits for a timer, and the timer waits for the waiter.
//
// Every goroutine of a run is in the bubble, so the holder of a mutex that a goroutine of the bubble
// waits on is of the bubble too: when every other goroutine is idle, the holder is waiting for time
// (or for nothing: a deadlock, still reported), and letting the clock move is what real time would
// do. MutexWaitsIdle therefore marks the runtime's three mutex wait reasons idle for synctest, in the
// runtime's own table (runtime.isIdleInSynctest, a [n]bool indexed by wait reason). Nothing exports
// it, and a test binary has no symbol table, so it is found in the process's memory, read and written
// through /proc/self/mem: first the table of wait reason names (runtime.waitReasonStrings, found by
// its three mutex names in a row), which gives each reason's index; then the one place in the
// executable's writable data that holds exactly the idle pattern those indices give for the reasons
// synctest counts idle. Anything unexpected (another runtime, no /proc, two matches) leaves the
// runtime alone and is returned; a run that then hangs is reported by the caller's stall watch.

var (
	idleOnce sync.Once
	idleErr  error
	// where the table was found, for setMutexWaitsIdle: its address and the mutex reasons' indices
	idleAt    int64
	idleIndex []int
)

// idleReasons are the wait reasons the runtime counts idle in a bubble (Go 1.25, 1.26).
var idleReasons = []string{
	"chan receive (nil chan)", "chan send (nil chan)", "select (no cases)", "sleep", "sync.Cond.Wait",
	"sync.WaitGroup.Wait (durable)", "coroutine", "synctest.Run", "synctest.Wait", "chan receive (durable)",
	"chan send (durable)", "select (durable)",
}

// mutexReasons are the wait reasons MutexWaitsIdle marks idle, in the runtime's order.
var mutexReasons = []string{"sync.Mutex.Lock", "sync.RWMutex.RLock", "sync.RWMutex.Lock"}

// MutexWaitsIdle makes waits on a sync.Mutex or sync.RWMutex count as idle in every bubble of this
// process (once; later calls return the first answer), or says why it could not.
func MutexWaitsIdle() error {
	idleOnce.Do(func() {
		idleErr = markMutexWaitsIdle()
		if idleErr != nil {
			idleErr = fmt.Errorf("bubble: waits on a mutex keep a bubble's clock still: %w", idleErr)
		}
	})
	return idleErr
}

type segment struct {
	start uint64
	data  []byte
}

func markMutexWaitsIdle() error {
	if runtime.GOOS != "linux" || strconv.IntSize != 64 {
		return fmt.Errorf("the runtime's tables are found on 64-bit Linux only (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	segs, err := writableSegments(mem)
	if err != nil {
		return err
	}
	names, err := reasonNames(mem, segs)
	if err != nil {
		return err
	}
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	last := 0
	for _, r := range append(append([]string(nil), idleReasons...), mutexReasons...) {
		i, ok := index[r]
		if !ok {
			return fmt.Errorf("the runtime has no wait reason %q", r)
		}
		last = max(last, i)
	}
	want := make([]byte, last+1)
	for _, r := range idleReasons {
		want[index[r]] = 1
	}
	var at []uint64
	for _, s := range segs {
		for off := 0; ; {
			i := bytes.Index(s.data[off:], want)
			if i < 0 {
				break
			}
			at = append(at, s.start+uint64(off+i))
			off += i + 1
		}
	}
	if len(at) != 1 {
		return fmt.Errorf("the runtime's idle table was found %d times, not once", len(at))
	}
	idleAt = int64(at[0])
	idleIndex = nil
	for _, r := range mutexReasons {
		idleIndex = append(idleIndex, index[r])
		if _, err := mem.WriteAt([]byte{1}, int64(at[0])+int64(index[r])); err != nil {
			return err
		}
	}
	got := make([]byte, len(want))
	if _, err := mem.ReadAt(got, int64(at[0])); err != nil {
		return err
	}
	for _, r := range mutexReasons {
		if got[index[r]] != 1 {
			return errors.New("the runtime's idle table did not take the change")
		}
	}
	return nil
}

// writableSegments reads the executable's writable mappings (its data and bss).
func writableSegments(mem *os.File) ([]segment, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var segs []segment
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[1], "rw") || fields[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start || end-start > 1<<30 {
			continue
		}
		data := make([]byte, end-start)
		if _, err := mem.ReadAt(data, int64(start)); err != nil {
			return nil, err
		}
		segs = append(segs, segment{start: start, data: data})
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("no writable mapping of %s in /proc/self/maps", exe)
	}
	return segs, sc.Err()
}

// reasonNames finds runtime.waitReasonStrings, a [n]string whose entry 0 is "", by its three mutex
// reasons in a row, and reads its names.
func reasonNames(mem *os.File, segs []segment) ([]string, error) {
	str := func(b []byte) (string, bool) {
		p, n := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		if n == 0 {
			return "", true
		}
		if n > 64 || p == 0 {
			return "", false
		}
		buf := make([]byte, n)
		if _, err := mem.ReadAt(buf, int64(p)); err != nil {
			return "", false
		}
		for _, c := range buf {
			if c < ' ' || c > '~' {
				return "", false
			}
		}
		return string(buf), true
	}
	var found [][]string
	for _, s := range segs {
		d := s.data
		for off := 0; off+48 <= len(d); off += 8 {
			if binary.LittleEndian.Uint64(d[off+8:]) != uint64(len(mutexReasons[0])) {
				continue
			}
			match := true
			for k, r := range mutexReasons {
				if v, ok := str(d[off+16*k:]); !ok || v != r {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			// Back to entry 0, the only empty name; then forward while entries are names.
			first := off
			for first >= 16 {
				v, ok := str(d[first-16:])
				if !ok {
					break
				}
				first -= 16
				if v == "" {
					break
				}
			}
			if v, _ := str(d[first:]); v != "" {
				continue
			}
			names := []string{""}
			for e := first + 16; e+16 <= len(d); e += 16 {
				v, ok := str(d[e:])
				if !ok || v == "" {
					break
				}
				names = append(names, v)
			}
			found = append(found, names)
		}
	}
	// Three names in a row are found elsewhere too (this package's own list of them): the runtime's
	// table is the one that names every reason synctest counts idle. It may be found more than once
	// (a copy), and its copies must agree.
	var table []string
	for _, f := range found {
		has := map[string]bool{}
		for _, n := range f {
			has[n] = true
		}
		all := true
		for _, r := range idleReasons {
			all = all && has[r]
		}
		if !all {
			continue
		}
		if table != nil && strings.Join(f, "\n") != strings.Join(table, "\n") {
			return nil, errors.New("the runtime's wait reason names were found twice, differing")
		}
		table = f
	}
	if table == nil {
		return nil, errors.New("the runtime's wait reason names were not found")
	}
	return table, nil
}

// setMutexWaitsIdle sets the mutex wait reasons idle or busy again, once MutexWaitsIdle has found the
// table (tests: to show what a bubble does without it).
func setMutexWaitsIdle(on bool) error {
	if err := MutexWaitsIdle(); err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	v := byte(0)
	if on {
		v = 1
	}
	for _, i := range idleIndex {
		if _, err := mem.WriteAt([]byte{v}, idleAt+int64(i)); err != nil {
			return err
		}
	}
	return nil
}
