//go:build tenure_mutants

package mutation

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docsTable is the table of docs/mutants.md, as the catalogue has it.
func docsTable() string {
	var b strings.Builder
	b.WriteString("| mutant | what it does instead | caught in | by |\n|---|---|---|---|\n")
	for _, m := range Mutants {
		caught, by := "none: no fault can expose it (see below)", "—"
		if len(m.Scenarios) > 0 {
			caught, by = "`"+strings.Join(m.Scenarios, "`, `")+"`", strings.Join(m.CaughtBy, ", ")
			if m.Mention != "" {
				by += fmt.Sprintf(" (%s)", m.Mention)
			}
		}
		fmt.Fprintf(&b, "| `%s` (%s) | %s | %s | %s |\n", m.Name, m.Of, m.Removes, caught, by)
	}
	return b.String()
}

// docs/mutants.md lists the catalogue as it is. When it does not, the test prints the table to paste
// between the markers.
func TestMutantsTableInDocs(t *testing.T) {
	const begin, end = "<!-- mutants table: from internal/mutation -->\n", "<!-- end of mutants table -->"
	b, err := os.ReadFile("../../docs/mutants.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/mutants.md has no table between %q and %q", strings.TrimSpace(begin), end)
	}
	if got, want := doc[i+len(begin):j], docsTable(); got != want {
		t.Errorf("docs/mutants.md's table is not the catalogue's; put this between the markers:\n%s", want)
	}
}

func TestMutantLookup(t *testing.T) {
	m, ok := Lookup(NoGuard)
	if !ok || m.System() != "mutant-no-guard" || m.Of != Lease {
		t.Errorf("Lookup(NoGuard) = %+v, %v", m, ok)
	}
	if _, ok := Lookup("no-such-mutant"); ok {
		t.Error("Lookup found a mutant that is not in the catalogue")
	}
}

// make test runs the tests of the tagged build as -run '^TestMutant': a test in a tagged file under
// another name would never run.
func TestMutantTestsAreNamedSo(t *testing.T) {
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		if !strings.HasPrefix(src, "//go:build tenure_mutants\n") {
			return nil
		}
		for _, line := range strings.Split(src, "\n") {
			if strings.HasPrefix(line, "func Test") && !strings.HasPrefix(line, "func TestMutant") {
				t.Errorf("%s: %s: a test of the tagged build must be named TestMutant...", path, line)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
