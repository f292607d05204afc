package sim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// statNice is the nice value (field 19) of a /proc stat file, and its process group (field 5).
func statNice(t *testing.T, path string) (nice, pgrp int, ok bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // from field 3 on
	nice, err = strconv.Atoi(fields[19-3])
	require.NoError(t, err)
	pgrp, err = strconv.Atoi(fields[5-3])
	require.NoError(t, err)
	return nice, pgrp, true
}

// harnessNice is the nice value of this process's threads: the least of them, as the spawner's thread
// alone runs lower.
func harnessNice(t *testing.T) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/stat")
	require.NoError(t, err)
	least, lower := 40, 0
	for _, p := range tasks {
		if n, _, ok := statNice(t, p); ok {
			least = min(least, n)
		}
	}
	for _, p := range tasks {
		if n, _, ok := statNice(t, p); ok && n != least {
			lower++
		}
	}
	require.LessOrEqual(t, lower, 1, "only the spawner's thread runs at another priority than the harness's")
	return least
}

// An instance is born at nice 10 below the harness, it and every thread and child process it makes, and
// the harness's own threads keep their priority.
func TestInstancesRunAtALowerPriority(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	nice, err := startProcess(cmd)
	require.NoError(t, err)
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() })
	require.NoError(t, nice, "the priority was lowered")
	want := min(harnessNice(t)+instanceNice, 19)

	// The shell and the two sleeps it forked: every thread of every process of the group.
	var seen map[string]int
	require.Eventually(t, func() bool {
		seen = map[string]int{}
		tasks, _ := filepath.Glob("/proc/[0-9]*/task/*/stat")
		for _, p := range tasks {
			if n, pgrp, ok := statNice(t, p); ok && pgrp == pid {
				seen[p] = n
			}
		}
		return len(seen) >= 3
	}, 5*time.Second, 10*time.Millisecond, "the group's processes: %v", seen)
	for p, n := range seen {
		require.Equal(t, want, n, "%s runs at nice %d", p, n)
	}
	harnessNice(t)
}
