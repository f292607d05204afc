package readme

import (
	"context"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goBlocks returns the Go code blocks of a Markdown text with the line each starts on.
func goBlocks(md string) (blocks []string, lines []int) {
	re := regexp.MustCompile("(?ms)^```go\n(.*?)^```")
	for _, m := range re.FindAllStringSubmatchIndex(md, -1) {
		blocks = append(blocks, md[m[2]:m[3]])
		lines = append(lines, strings.Count(md[:m[0]], "\n")+1)
	}
	return blocks, lines
}

// TestReadmeProgramsBuild builds every Go block of README.md: each must be a complete program (package
// main, with its imports) that compiles against this module. The blocks are written under testdata (which
// the go tool's ./... patterns skip) inside the module, so they build with its go.mod and no network.
func TestReadmeProgramsBuild(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	blocks, lines := goBlocks(string(md))
	require.GreaterOrEqual(t, len(blocks), 3, "README.md has lost its Go examples")

	require.NoError(t, os.MkdirAll("testdata", 0o755))
	root, err := os.MkdirTemp("testdata", "build-")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = os.RemoveAll(root)
		_ = os.Remove("testdata") // only when empty
	})
	var pkgs []string
	for i, b := range blocks {
		require.True(t, strings.HasPrefix(b, "package main\n"),
			"README.md line %d: a Go block must be a complete program starting with \"package main\"", lines[i])
		formatted, err := format.Source([]byte(b))
		require.NoError(t, err, "README.md line %d", lines[i])
		require.Equal(t, string(formatted), b, "README.md line %d: the Go block is not gofmt-formatted", lines[i])
		dir := filepath.Join(root, fmt.Sprintf("line%d", lines[i]))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(b), 0o644))
		pkgs = append(pkgs, "./"+filepath.ToSlash(dir))
	}

	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := t.TempDir()
	for _, args := range [][]string{{"build", "-o", out + string(filepath.Separator)}, {"vet"}} {
		cmd := exec.CommandContext(ctx, goTool, append(args, pkgs...)...)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
		b, err := cmd.CombinedOutput()
		// The directories are named after the README line each block starts on, so errors point there.
		require.NoError(t, err, "go %s of README.md's Go blocks (testdata/build-*/lineN is README.md line N):\n%s", args[0], b)
	}
}
