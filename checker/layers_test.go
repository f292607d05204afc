package checker

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// floors lays the package out as the model reads (docs/checker.md): the history index, then the model
// (timing, fault effects, lease record, confirmed leases, beliefs, what lies outside the assumptions),
// then what is owed and when, then the invariants, then Check. A file may use what its own floor and
// the floors below it declare, never what a floor above declares.
var floors = map[string]int{
	"index.go": 0, "result.go": 0, "words.go": 0, "timing.go": 0,
	"effects.go": 1, "record.go": 1, "leases.go": 1, "believed.go": 1, "outside.go": 1,
	"slots.go": 1, "linmodel.go": 1, "model.go": 1, "instances.go": 1, "landing.go": 1,
	"owed.go": 2, "takeover.go": 2, "view.go": 2,
	"assumptions.go": 3, "beliefs.go": 3, "stalebelief.go": 3, "singlepoller.go": 3, "validity.go": 3,
	"linearizability.go": 3, "lostwrite.go": 3, "failover.go": 3, "balance.go": 3, "fencing.go": 3,
	"liveness.go": 3, "blindwrite.go": 3,
	"checker.go": 4, "lag.go": 4, "visualize.go": 4,
}

var floorNames = []string{"the history index", "the model", "what is owed", "the invariants", "Check"}

func TestPackageLayersReadDownward(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	var files []*ast.File
	for _, f := range pkgs["checker"].Files {
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/tenurelabs/tenure/checker", fset, files, info)
	require.NoError(t, err)
	floorOf := func(pos token.Pos) (int, string) {
		name := filepath.Base(fset.Position(pos).Filename)
		f, ok := floors[name]
		require.True(t, ok, "%s has no floor: give it one in floors (and in docs/checker.md)", name)
		return f, name
	}
	var bad []string
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || obj.Parent() != pkg.Scope() && !isMethodOrField(obj) {
			continue
		}
		uf, user := floorOf(id.Pos())
		df, decl := floorOf(obj.Pos())
		if df > uf {
			bad = append(bad, user+" ("+floorNames[uf]+") uses "+obj.Name()+" from "+decl+" ("+floorNames[df]+")")
		}
	}
	require.Empty(t, bad, "a file uses what a floor above it declares")
}

func isMethodOrField(obj types.Object) bool {
	switch o := obj.(type) {
	case *types.Func:
		return o.Type().(*types.Signature).Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}
