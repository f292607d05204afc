package simcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tenurelabs/tenure/reports"
)

// collection is a directory that receives the runs of a suite, a matrix or a bench. Its marker
// (reports.FileMarker) names the runs written into it, those of an earlier command into the same
// directory included, and is kept up to date as runs start and are removed, so that a command cut short
// still leaves a directory that simrun report recognises.
type collection struct {
	dir       string
	kind      reports.Kind
	existed   bool     // the directory was there before: empty, or a collection of the same kind
	hadMarker bool     // and held a marker, naming earlier
	earlier   []string // the runs its marker named before this command

	mu      sync.Mutex
	planned []string        // this command's runs, relative to dir, in the order planned
	present map[string]bool // of those (and of runs added unplanned), the ones whose directory exists
	extra   []string        // runs added that were not planned (a soak's next seeds)
	known   map[string]bool // planned and extra, as a set
	// A collection of many runs (a long campaign) writes its marker at most once a second while runs
	// are added (writing it after each of 100,000 runs costs more than running them); flush writes
	// what is pending.
	wroteAt time.Time
	dirty   bool
}

// throttleAbove is the number of planned runs above which the marker is written at most once a second.
const throttleAbove = 1000

// claimOutputs checks, before anything starts, that every directory a command is about to write may be
// written (reports.CheckOut): base, the collection's ("" when a single run is written), and each run's.
// No two runs may share a directory. It then marks base, creating it, and returns it as a collection;
// nil when base is "".
func claimOutputs(base string, kind reports.Kind, runDirs []string) (*collection, error) {
	seen := map[string]bool{}
	for _, d := range runDirs {
		if seen[filepath.Clean(d)] {
			return nil, fmt.Errorf("%w: two runs would write into %s: name each scenario once", errUsage, d)
		}
		seen[filepath.Clean(d)] = true
	}
	if base != "" {
		if err := reports.CheckOut(base, kind); err != nil {
			return nil, outDirError("--out", err)
		}
	}
	for _, d := range runDirs {
		what := "run directory"
		if base == "" {
			what = "--out"
		}
		if err := reports.CheckOut(d, reports.KindRun); err != nil {
			return nil, outDirError(what, err)
		}
	}
	if base == "" {
		return nil, nil
	}
	c := &collection{dir: base, kind: kind, present: map[string]bool{}}
	if _, err := os.Stat(base); err == nil {
		c.existed = true
	}
	if m, err := reports.ReadMarker(base); err == nil {
		c.hadMarker, c.earlier = true, m.Runs
	}
	c.known = map[string]bool{}
	for _, d := range runDirs {
		c.planned = append(c.planned, c.rel(d))
		c.known[c.rel(d)] = true
	}
	return c, c.write()
}

// outDirError words a refusal of reports.CheckOut for the command line.
func outDirError(what string, err error) error {
	if errors.Is(err, reports.ErrOutRefused) {
		return fmt.Errorf("%w: %s %v", errUsage, what, err)
	}
	return fmt.Errorf("%w: %s: %v", errUsage, what, err)
}

// rel is a run directory relative to the collection's, with forward slashes.
func (c *collection) rel(dir string) string {
	r, err := filepath.Rel(c.dir, dir)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	return filepath.ToSlash(r)
}

// add records that a run's directory now exists.
func (c *collection) add(dir string) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rel(dir)
	if !c.known[r] {
		c.extra = append(c.extra, r)
		c.known[r] = true
	}
	c.present[r] = true
	if len(c.planned) > throttleAbove && time.Since(c.wroteAt) < time.Second {
		c.dirty = true
		return nil
	}
	return c.writeLocked()
}

// flush writes the marker if an add left it behind.
func (c *collection) flush() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	return c.writeLocked()
}

// remove records that a run's directory was removed (its run could not be set up, or a bench run
// passed).
func (c *collection) remove(dir string) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.present, c.rel(dir))
	return c.writeLocked()
}

func (c *collection) write() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeLocked()
}

// writeLocked writes the marker: the earlier runs, then this command's that exist, in planned order.
func (c *collection) writeLocked() error {
	c.wroteAt, c.dirty = time.Now(), false
	runs := slices.Clone(c.earlier)
	listed := map[string]bool{}
	for _, r := range runs {
		listed[r] = true
	}
	for _, r := range append(slices.Clone(c.planned), c.extra...) {
		if c.present[r] && !listed[r] {
			runs = append(runs, r)
			listed[r] = true
		}
	}
	if err := reports.WriteMarker(c.dir, reports.Marker{Kind: c.kind, Runs: runs}); err != nil {
		return fmt.Errorf("mark %s: %w", c.dir, err)
	}
	return nil
}

// abandon undoes the claim when nothing was written: a directory this command created is removed, one
// that was there is left as it was found.
func (c *collection) abandon() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.existed:
		_ = os.RemoveAll(c.dir)
	case c.hadMarker:
		_ = reports.WriteMarker(c.dir, reports.Marker{Kind: c.kind, Runs: c.earlier})
	default:
		_ = os.Remove(filepath.Join(c.dir, reports.FileMarker))
	}
}

// wrote reports whether any run of this command left its directory.
func (c *collection) wrote() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.present) > 0
}
