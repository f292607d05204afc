package reports

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// node is an element of a parsed page. Pages are written as well-formed XML (XHTML-compatible HTML with
// inline SVG), so encoding/xml parses them strictly; a parse failure is a test failure.
type node struct {
	name     string
	attrs    map[string]string
	children []*node
	text     strings.Builder
	parent   *node
}

// parsePage parses a file strictly and returns its root.
func parsePage(t *testing.T, path string) *node {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return parseXML(t, b)
}

func parseXML(t *testing.T, b []byte) *node {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	root := &node{name: "#document", attrs: map[string]string{}}
	cur := root
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "page is not well-formed")
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{name: tk.Name.Local, attrs: map[string]string{}, parent: cur}
			for _, a := range tk.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			cur.children = append(cur.children, n)
			cur = n
		case xml.EndElement:
			require.Equal(t, cur.name, tk.Name.Local)
			cur = cur.parent
		case xml.CharData:
			for n := cur; n != nil; n = n.parent {
				n.text.Write(tk)
			}
		}
	}
	require.Same(t, root, cur, "unclosed elements")
	return root
}

// hasClass reports whether n's class attribute contains c.
func (n *node) hasClass(c string) bool {
	for _, f := range strings.Fields(n.attrs["class"]) {
		if f == c {
			return true
		}
	}
	return false
}

// all returns every descendant (n included) for which match holds, in document order.
func (n *node) all(match func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		if match(x) {
			out = append(out, x)
		}
		for _, c := range x.children {
			walk(c)
		}
	}
	walk(n)
	return out
}

func (n *node) byClass(c string) []*node { return n.all(func(x *node) bool { return x.hasClass(c) }) }

func (n *node) byName(name string) []*node {
	return n.all(func(x *node) bool { return x.name == name })
}

// svg returns the chart with the given data-view, or nil.
func (n *node) svg(view string) *node {
	for _, s := range n.byName("svg") {
		if s.attrs["data-view"] == view {
			return s
		}
	}
	return nil
}

// svgs returns every chart with the given data-view.
func (n *node) svgs(view string) []*node {
	return n.all(func(x *node) bool { return x.name == "svg" && x.attrs["data-view"] == view })
}

func (n *node) byID(id string) *node {
	for _, x := range n.all(func(x *node) bool { return x.attrs["id"] == id }) {
		return x
	}
	return nil
}
