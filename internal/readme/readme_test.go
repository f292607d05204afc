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

// readmes are the READMEs whose Go blocks must build, relative to the repository's root.
var readmes = []string{"README.md", "election/README.md"}

// TestReadmeProgramsBuild builds every Go block of the READMEs: each must be a complete program (package
// main, with its imports), gofmt-formatted, that compiles and vets against this module. The blocks are written under testdata (which
// the go tool's ./... patterns skip) inside the module, so they build with its go.mod and no network.
func TestReadmeProgramsBuild(t *testing.T) {
	type block struct {
		file, code string
		line       int
	}
	var all []block
	for _, file := range readmes {
		md, err := os.ReadFile(filepath.Join("..", "..", file))
		require.NoError(t, err)
		blocks, lines := goBlocks(string(md))
		require.NotEmpty(t, blocks, "%s has lost its Go examples", file)
		for i, b := range blocks {
			all = append(all, block{file, b, lines[i]})
		}
	}

	require.NoError(t, os.MkdirAll("testdata", 0o755))
	root, err := os.MkdirTemp("testdata", "build-")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = os.RemoveAll(root)
		_ = os.Remove("testdata") // only when empty
	})
	var pkgs []string
	for i, b := range all {
		where := fmt.Sprintf("%s line %d", b.file, b.line)
		require.True(t, strings.HasPrefix(b.code, "package main\n"),
			"%s: a Go block must be a complete program starting with \"package main\"", where)
		formatted, err := format.Source([]byte(b.code))
		require.NoError(t, err, where)
		require.Equal(t, string(formatted), b.code, "%s: the Go block is not gofmt-formatted", where)
		dir := filepath.Join(root, fmt.Sprintf("b%02d", i))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("// "+where+"\n\n"+b.code), 0o644))
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
		// Each file's first line names the README and line its block starts on.
		require.NoError(t, err, "go %s of the READMEs' Go blocks:\n%s", args[0], b)
	}
}

// TestReadmeProgramsBuildOutsideTheCheckout builds every Go block of the READMEs as a user does, in a
// module of its own outside the repository, with the steps README.md gives: go mod init, a replace of
// this module by the checkout, go mod tidy, go build.
func TestReadmeProgramsBuildOutsideTheCheckout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "go mod edit -replace github.com/tenurelabs/tenure=", "README.md says how to build its programs outside the checkout")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	for _, file := range readmes {
		md, err := os.ReadFile(filepath.Join(root, file))
		require.NoError(t, err)
		blocks, lines := goBlocks(string(md))
		for i, b := range blocks {
			where := fmt.Sprintf("%s line %d", file, lines[i])
			dir := t.TempDir()
			require.False(t, strings.HasPrefix(dir, root), "the module lies outside the checkout")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(b), 0o644))
			for _, args := range [][]string{
				{"mod", "init", "example.com/readme"},
				{"mod", "edit", "-replace", "github.com/tenurelabs/tenure=" + root},
				{"mod", "tidy"},
				{"build", "-o", os.DevNull, "."},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				cmd := exec.CommandContext(ctx, goTool, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
				out, err := cmd.CombinedOutput()
				cancel()
				require.NoError(t, err, "%s: go %s:\n%s", where, strings.Join(args, " "), out)
			}
		}
	}
}
