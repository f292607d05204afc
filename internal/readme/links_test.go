package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// markdownFiles returns every Markdown file of the repository, relative to its root, leaving out what
// is not the project's own (installed packages, test data).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "target", "simrun-out", "bin", ".venv":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(repoRoot, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	fenceRe   = regexp.MustCompile("(?ms)^```.*?^```")
	codeRe    = regexp.MustCompile("`[^`\n]*`")
	headingRe = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	anchorRe  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// slug is the anchor GitHub gives a heading: lower case, punctuation dropped (hyphens and underscores
// kept), spaces made hyphens.
func slug(h string) string {
	h = strings.ToLower(codeRe.ReplaceAllStringFunc(h, func(s string) string { return strings.Trim(s, "`") }))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors a Markdown text defines: its headings' (a repeated heading's get -1,
// -2, ...) and explicit <a name> ones.
func anchors(md string) map[string]bool {
	md = fenceRe.ReplaceAllString(md, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRe.FindAllStringSubmatch(md, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range anchorRe.FindAllStringSubmatch(md, -1) {
		out[m[1]] = true
	}
	return out
}

// Every relative link of the repository's Markdown resolves: to a file or directory that exists, and,
// with a fragment, to a heading or anchor of that file.
func TestRelativeLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files under %s", len(files), repoRoot)
	}
	texts := map[string]string{}
	read := func(rel string) (string, bool) {
		if s, ok := texts[rel]; ok {
			return s, true
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			return "", false
		}
		texts[rel] = string(b)
		return string(b), true
	}
	checked := 0
	for _, f := range files {
		md, _ := read(f)
		body := fenceRe.ReplaceAllString(md, "")
		body = codeRe.ReplaceAllString(body, "")
		for _, m := range linkRe.FindAllStringSubmatch(body, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			rel := f
			if path != "" {
				rel = filepath.Clean(filepath.Join(filepath.Dir(f), path))
				if strings.HasPrefix(rel, "..") {
					t.Errorf("%s: link %q leaves the repository", f, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, rel)); err != nil {
					t.Errorf("%s: link %q: %s does not exist", f, target, rel)
					continue
				}
			}
			checked++
			if frag == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			text, _ := read(rel)
			if !anchors(text)[frag] {
				t.Errorf("%s: link %q: %s has no heading or anchor %q", f, target, rel, frag)
			}
		}
	}
	t.Logf("%d relative links in %d Markdown files", checked, len(files))
}
