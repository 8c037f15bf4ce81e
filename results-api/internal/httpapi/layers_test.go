package httpapi_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/crowsnest-dev/crowsnest/results-api"

// TestLayersPointOneWay fails when a package below the transport imports
// httpapi, directly or through another package of this module: only the
// composition root (service), the binary and the test harness built on
// them may.
func TestLayersPointOneWay(t *testing.T) {
	imports := moduleImports(t, filepath.Join("..", ".."))
	transport := module + "/internal/httpapi"
	mayReach := []string{transport, module + "/internal/service", module + "/internal/apitest", module + "/cmd/results-api"}
	var reaches func(pkg string, seen map[string]bool) bool
	reaches = func(pkg string, seen map[string]bool) bool {
		if pkg == transport {
			return true
		}
		if seen[pkg] {
			return false
		}
		seen[pkg] = true
		return slices.ContainsFunc(imports[pkg], func(dep string) bool { return reaches(dep, seen) })
	}
	if len(imports) < 10 {
		t.Fatalf("found only %d packages: %v", len(imports), imports)
	}
	for pkg := range imports {
		if !slices.Contains(mayReach, pkg) && reaches(pkg, map[string]bool{}) {
			t.Errorf("%s imports the transport (httpapi)", pkg)
		}
	}
}

// moduleImports maps each package of the module under root to the module
// packages its non-test files import.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := path.Join(module, filepath.ToSlash(rel))
		for _, is := range f.Imports {
			dep, _ := strconv.Unquote(is.Path.Value)
			if strings.HasPrefix(dep, module+"/") && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
