package api

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNothingInternal holds the contract package to its promise: a
// client that imports the generated types must not pull in (or be refused,
// by Go's internal rule) results-api's internals.
func TestImportsNothingInternal(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		checked++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if path == "internal" || strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") ||
				strings.HasSuffix(path, "/internal") {
				t.Errorf("%s imports %s: the contract package must import nothing internal", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Go files checked")
	}
}
