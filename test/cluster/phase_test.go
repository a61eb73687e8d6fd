package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryClusterTestNamesItsPhase fails a test of a cluster suite that
// does not start with cluster.Shared(t) or cluster.Quiet(t): hack/e2e.sh
// runs the suite once per phase, and such a test would run in both, sharing
// the node while it needs it to itself. A cluster test is one in a file
// built with the e2e tag, or one that connects to the cluster through the
// package's connect helper (the oracle's files carry no tag).
func TestEveryClusterTestNamesItsPhase(t *testing.T) {
	// Suites that never reach the local cluster: the controller tier runs
	// its own apiserver; builder and perf are not suites of cluster tests.
	skip := map[string]bool{"builder": true, "cluster": true, "controller": true, "perf": true, "images": true}
	// The packages hack/e2e.sh runs once per phase (its SUITES).
	phased := map[string]bool{"crd": true, "deploy": true, "e2e": true, "metrics": true, "oracle": true}
	fset := token.NewFileSet()
	checked, offline := 0, 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && filepath.Dir(path) == ".." && skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		tagged := false
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if c.Pos() < f.Package && strings.HasPrefix(c.Text, "//go:build") && strings.Contains(c.Text, "e2e") {
					tagged = true
				}
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			if !tagged && !calls(fn.Body, "connect") {
				// A test of a package hack/e2e.sh runs that needs no
				// cluster runs in make check, and is skipped by each phase.
				if !phased[filepath.Base(filepath.Dir(path))] {
					continue
				}
				offline++
				if !startsWith(fn, "Offline") {
					t.Errorf("%s: %s needs no cluster and must start with cluster.Offline(t)", fset.Position(fn.Pos()), fn.Name.Name)
				}
				continue
			}
			checked++
			if !startsWith(fn, "Shared", "Quiet", "Apps") {
				t.Errorf("%s: %s must start with cluster.Shared(t), cluster.Quiet(t) or cluster.Apps(t)", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk found the suites: a moved directory must not make this
	// test pass on nothing.
	if checked < 50 {
		t.Fatalf("checked %d cluster tests; the suites hold more than 50", checked)
	}
	t.Logf("%d cluster tests name their phase; %d tests beside them need no cluster", checked, offline)
}

// startsWith says whether fn's first statement calls cluster.NAME, for
// one of names.
func startsWith(fn *ast.FuncDecl, names ...string) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "cluster" && slices.Contains(names, sel.Sel.Name)
}

// calls says whether body calls the package-level function name.
func calls(body *ast.BlockStmt, name string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == name {
				found = true
			}
		}
		return !found
	})
	return found
}
