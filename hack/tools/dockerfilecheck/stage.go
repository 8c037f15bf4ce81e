package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Stage is a Dockerfile build stage replayed without a Docker engine: the
// files its COPY instructions take from the build context, laid out under
// Dir as they would be under the stage's WORKDIR, its ENV, and the make
// targets its RUN instructions call.
type Stage struct {
	Dir     string
	Env     []string
	Targets []string
}

var makeTarget = regexp.MustCompile(`\bmake\s+([a-z][a-z0-9-]*)`)

// ReplayStage copies the context files of stage name of dockerfile into dir.
// COPY --from (another stage) is skipped; .dockerignore is honoured.
func ReplayStage(root, dockerfile, name, dir string) (*Stage, error) {
	data, err := os.ReadFile(filepath.Join(root, dockerfile))
	if err != nil {
		return nil, err
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, err
	}
	ignore, err := readIgnore(root)
	if err != nil {
		return nil, err
	}
	for _, st := range stages {
		if st.Name != name {
			continue
		}
		out := &Stage{Dir: dir}
		workdir := "/"
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.WorkdirCommand:
				workdir = path.Join(workdir, c.Path)
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					out.Env = append(out.Env, kv.Key+"="+kv.Value)
				}
			case *instructions.RunCommand:
				for _, m := range makeTarget.FindAllStringSubmatch(strings.Join(c.CmdLine, " "), -1) {
					out.Targets = append(out.Targets, m[1])
				}
			case *instructions.CopyCommand:
				if c.From != "" {
					continue
				}
				dest := c.DestPath
				if !path.IsAbs(dest) {
					dest = path.Join(workdir, dest) + map[bool]string{true: "/"}[strings.HasSuffix(c.DestPath, "/")]
				}
				if !strings.HasPrefix(dest, "/src") {
					return nil, fmt.Errorf("%s: COPY to %s is outside the stage's /src workdir", dockerfile, dest)
				}
				for _, src := range c.SourcePaths {
					if err := copySource(root, src, filepath.Join(dir, strings.TrimPrefix(dest, "/src")), strings.HasSuffix(dest, "/"), ignore); err != nil {
						return nil, fmt.Errorf("%s: COPY %s: %w", dockerfile, src, err)
					}
				}
			}
		}
		if workdir != "/src" {
			return nil, fmt.Errorf("%s: stage %s works in %s, want /src", dockerfile, name, workdir)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s has no stage %q", dockerfile, name)
}

// copySource copies one COPY source (a file, a directory's contents or a
// glob) to dest with Docker's rules.
func copySource(root, src, dest string, destIsDir bool, ignore interface {
	MatchesOrParentMatches(string) (bool, error)
}) error {
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(path.Clean(src))))
	if err != nil {
		return fmt.Errorf("bad pattern: %w", err)
	}
	if len(matches) == 0 {
		return errors.New("no match in the build context")
	}
	for _, m := range matches {
		info, err := os.Stat(m)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			target := dest
			if destIsDir || len(matches) > 1 {
				target = filepath.Join(dest, filepath.Base(m))
			}
			if err := copyFile(root, m, target, ignore); err != nil {
				return err
			}
			continue
		}
		err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(m, p)
			return copyFile(root, p, filepath.Join(dest, rel), ignore)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func copyFile(root, src, dst string, ignore interface {
	MatchesOrParentMatches(string) (bool, error)
}) error {
	rel, _ := filepath.Rel(root, src)
	if ignore != nil {
		if skip, _ := ignore.MatchesOrParentMatches(filepath.ToSlash(rel)); skip {
			return nil
		}
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, info.Mode().Perm())
}
