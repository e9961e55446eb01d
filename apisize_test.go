package fusebox_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// maxDomainNames bounds what the domain (the root and breaker) exports:
// every name a reader of `go doc -all` must learn. Lower it when names go;
// the aim is 100 (gobreaker v2 exports 29).
const maxDomainNames = 100

// The domain stays small enough to read in one sitting. A name counts once
// for each exported top-level const, var, func and type and each exported
// method of an exported type, as go/doc shows them; the exported fields and
// interface methods of exported types are counted apart and only logged.
// Run with -v to see the counts.
func TestTheDomainExportsFewNames(t *testing.T) {
	total := 0
	for _, dir := range []string{".", "breaker"} {
		names, fields := exportedNames(t, dir)
		t.Logf("%s: %d exported names, and %d exported fields", dir, names, fields)
		total += names
	}
	t.Logf("root and breaker: %d exported names (at most %d)", total, maxDomainNames)
	if total > maxDomainNames {
		t.Errorf("root and breaker export %d names, over %d: move what a front end needs to the front end", total, maxDomainNames)
	}
}

// exportedNames counts the names the package in dir exports, without its
// tests, and apart from them the exported fields of its types.
func exportedNames(t *testing.T, dir string) (names, fields int) {
	t.Helper()
	fset := token.NewFileSet()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, dir, notTest, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		var files []*ast.File
		for _, f := range pkg.Files {
			files = append(files, f)
		}
		p, err := doc.NewFromFiles(fset, files, "x")
		if err != nil {
			t.Fatal(err)
		}
		names += values(p.Consts) + values(p.Vars) + len(p.Funcs)
		for _, typ := range p.Types {
			names += 1 + values(typ.Consts) + values(typ.Vars) + len(typ.Funcs) + len(typ.Methods)
			fields += members(typ.Decl)
		}
	}
	return names, fields
}

// values counts the exported names of const or var declarations.
func values(vs []*doc.Value) int {
	n := 0
	for _, v := range vs {
		for _, name := range v.Names {
			if token.IsExported(name) {
				n++
			}
		}
	}
	return n
}

// members counts the exported fields of a struct type or methods of an
// interface type.
func members(decl *ast.GenDecl) int {
	n := 0
	for _, spec := range decl.Specs {
		var list *ast.FieldList
		switch typ := spec.(*ast.TypeSpec).Type.(type) {
		case *ast.StructType:
			list = typ.Fields
		case *ast.InterfaceType:
			list = typ.Methods
		}
		if list == nil {
			continue
		}
		for _, f := range list.List {
			for _, name := range f.Names {
				if name.IsExported() {
					n++
				}
			}
		}
	}
	return n
}
