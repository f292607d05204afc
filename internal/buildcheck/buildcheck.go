// Package buildcheck reads the default build of a package as the go tool sees it (its documentation,
// imports, files and embedded files), for the tests that keep the libraries free of the checker-power
// mutants, which exist only in a build with the tenure_mutants tag (docs/mutants.md).
package buildcheck

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// NoMutants fails t when the default build of the package in dir mentions a mutation in its
// documentation (go doc -all), imports the mutation set, or builds or embeds a mutant's file.
func NoMutants(t testing.TB, dir string) {
	t.Helper()
	if doc := goTool(t, dir, "doc", "-all", "."); strings.Contains(strings.ToLower(doc), "mutat") {
		var lines []string
		for _, l := range strings.Split(doc, "\n") {
			if strings.Contains(strings.ToLower(l), "mutat") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		t.Errorf("go doc -all shows mutations:\n  %s", strings.Join(lines, "\n  "))
	}
	var pkg struct {
		ImportPath string
		Imports    []string
		GoFiles    []string
		EmbedFiles []string
	}
	if err := json.Unmarshal([]byte(goTool(t, dir, "list", "-json", ".")), &pkg); err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasSuffix(imp, "/internal/mutation") {
			t.Errorf("%s imports %s", pkg.ImportPath, imp)
		}
	}
	for _, f := range append(pkg.GoFiles, pkg.EmbedFiles...) {
		if strings.Contains(strings.ToLower(f), "mutant") {
			t.Errorf("%s builds or embeds %s", pkg.ImportPath, f)
		}
	}
}

// goTool runs the go command in dir for the default build: no build tags, whatever GOFLAGS the test
// runs with.
func goTool(t testing.TB, dir string, args ...string) string {
	t.Helper()
	bin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(bin); err != nil {
		bin = "go"
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
