package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"golang.org/x/mod/modfile"
)

// skipDirs are never searched for Dockerfiles.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "bin": true, ".cache": true, ".stack": true}

// FindDockerfiles returns the repository-relative paths of every Dockerfile
// (named Dockerfile or *.Dockerfile) under root, sorted.
func FindDockerfiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipDirs[d.Name()] && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "Dockerfile" || strings.HasSuffix(d.Name(), ".Dockerfile") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// Check verifies one Dockerfile (a path relative to root, the build context)
// and returns every problem found; an empty slice means it is fine.
func Check(root, dockerfile string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, dockerfile))
	if err != nil {
		return nil, err
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return []string{fmt.Sprintf("%s: parse: %v", dockerfile, err)}, nil
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return []string{fmt.Sprintf("%s: instructions: %v", dockerfile, err)}, nil
	}
	if bytes.Contains(data, []byte("# dockerfilecheck: parse-only")) {
		return nil, nil // its build context is generated output, not the repository
	}
	ignore, err := readIgnore(root)
	if err != nil {
		return nil, err
	}

	var problems []string
	var copied []string
	for _, stage := range stages {
		for _, cmd := range stage.Commands {
			var srcs []string
			switch c := cmd.(type) {
			case *instructions.CopyCommand:
				if c.From != "" { // another stage or an image, not the context
					continue
				}
				srcs = c.SourcePaths
			case *instructions.AddCommand:
				srcs = c.SourcePaths
			default:
				continue
			}
			for _, src := range srcs {
				if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") || strings.Contains(src, "$") {
					continue // remote sources and build-arg expansions are not context paths
				}
				rel := path.Clean(strings.TrimPrefix(src, "/"))
				copied = append(copied, rel)
				if p := checkSource(root, rel, ignore); p != "" {
					problems = append(problems, fmt.Sprintf("%s:%d: %s %s: %s", dockerfile, lineOf(cmd), strings.ToUpper(cmd.Name()), src, p))
				}
			}
		}
	}
	modProblems, err := checkReplaces(root, dockerfile, copied)
	if err != nil {
		return nil, err
	}
	return append(problems, modProblems...), nil
}

func lineOf(cmd instructions.Command) int {
	if loc := cmd.Location(); len(loc) > 0 {
		return loc[0].Start.Line
	}
	return 0
}

// checkSource says what is wrong with one context path, or "" if nothing.
func checkSource(root, rel string, ignore *patternmatcher.PatternMatcher) string {
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "outside the build context"
	}
	matches := []string{rel}
	if strings.ContainsAny(rel, "*?[") {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Sprintf("bad pattern: %v", err)
		}
		if len(m) == 0 {
			return "no file in the build context matches"
		}
		matches = matches[:0]
		for _, p := range m {
			r, _ := filepath.Rel(root, p)
			matches = append(matches, filepath.ToSlash(r))
		}
	} else if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		return "does not exist in the build context"
	}
	if ignore != nil && rel != "." {
		for _, m := range matches {
			if ok, _ := ignore.MatchesOrParentMatches(m); ok {
				return fmt.Sprintf("%s is excluded by .dockerignore", m)
			}
		}
	}
	return ""
}

func readIgnore(root string) (*patternmatcher.PatternMatcher, error) {
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read .dockerignore: %w", err)
	}
	return patternmatcher.New(patterns)
}

// checkReplaces: a module built with GOWORK=off needs every directory its
// go.mod replaces a module with; the Dockerfile must copy it (its go.mod at
// least, or a parent directory).
func checkReplaces(root, dockerfile string, copied []string) ([]string, error) {
	dir := path.Dir(dockerfile)
	gomod := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(gomod)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	mf, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", gomod, err)
	}
	var problems []string
	for _, r := range mf.Replace {
		if r.New.Version != "" || !modfile.IsDirectoryPath(r.New.Path) {
			continue
		}
		target := path.Clean(path.Join(dir, r.New.Path))
		if !copiesModule(copied, target) {
			problems = append(problems, fmt.Sprintf("%s: go.mod replaces %s with %s, but the Dockerfile does not copy %s/go.mod",
				dockerfile, r.Old.Path, r.New.Path, target))
		}
	}
	return problems, nil
}

// copiesModule reports whether one of the copied sources brings target/go.mod.
func copiesModule(copied []string, target string) bool {
	want := target + "/go.mod"
	for _, src := range copied {
		if src == "." || src == target || src == want || strings.HasPrefix(want, src+"/") {
			return true
		}
		if ok, _ := path.Match(src, want); ok {
			return true
		}
	}
	return false
}
