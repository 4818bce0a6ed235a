package codeshape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const (
	maxFuncLines   = 90
	maxTypeMethods = 30
)

// TestShape: every function of the product is at most maxFuncLines long,
// and no type declares more than maxTypeMethods methods.
func TestShape(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]int{} // package dir + "." + type name
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "demo" || rel == filepath.Join("cmd", "mcp-tasks-bench") || rel == "testdata" ||
				strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, over %d: split it", rel, start, fn.Name.Name, n, maxFuncLines)
			}
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				if name := recvName(fn.Recv.List[0].Type); name != "" {
					methods[filepath.Dir(rel)+"."+name]++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d production files under %s; the walk is looking in the wrong place", files, root)
	}
	for typ, n := range methods {
		if n > maxTypeMethods {
			t.Errorf("type %s has %d methods, over %d: give part of its work to a type of its own", typ, n, maxTypeMethods)
		}
	}
}

// recvName is the type name of a method's receiver (T, *T, T[P] or *T[P]).
func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	}
	return ""
}
