package main

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestGoStagesBuild replays the Go build stage of each release Dockerfile
// without Docker: only the files the stage copies from the context, laid out
// as in the image, then the make target its RUN calls, with its ENV
// (GOWORK=off, CGO_ENABLED=0). The static binary must come out. The module
// cache and build cache are the host's, as BuildKit's cache mounts would be.
func TestGoStagesBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every component")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, component := range []string{"operator", "results-api", "uploader"} {
		t.Run(component, func(t *testing.T) {
			dir := t.TempDir()
			st, err := ReplayStage(root, component+"/Dockerfile", "build", dir)
			if err != nil {
				t.Fatal(err)
			}
			want := "build-" + component
			if !slices.Contains(st.Targets, want) {
				t.Fatalf("the build stage runs make %v, want %s (the target CI runs)", st.Targets, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				t.Fatal("go.work was copied into the image; the build must be GOWORK=off")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.CommandContext(ctx, "make", want, "BIN="+out)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), st.Env...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make %s in the replayed stage: %v\n%s", want, err, b)
			}
			bin := filepath.Join(out, component)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatalf("%s is not an ELF binary: %v", bin, err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s is dynamically linked; distroless static needs CGO_ENABLED=0", bin)
				}
			}
			info, _ := os.Stat(bin)
			t.Logf("%s: %.1f MB", component, float64(info.Size())/1e6)
		})
	}
}

// TestReplayStage pins the COPY semantics the replay implements.
func TestReplayStage(t *testing.T) {
	root := writeTree(t, map[string]string{
		".dockerignore":  "svc/secret.env\n",
		"Makefile":       "all:\n",
		"lib/go.mod":     "module example.com/lib\n",
		"lib/go.sum":     "",
		"lib/lib.go":     "package lib\n",
		"svc/main.go":    "package main\n",
		"svc/secret.env": "X=1\n",
		"svc/sub/x.go":   "package sub\n",
		"svc/Dockerfile": "FROM golang AS build\nWORKDIR /src\nENV GOWORK=off\nCOPY lib/go.* lib/\nCOPY svc/ svc/\nCOPY Makefile ./\nCOPY svc/main.go renamed.go\nRUN make build-svc BIN=/out\nFROM scratch\nCOPY --from=build /out/svc /svc\n",
	})
	dir := t.TempDir()
	st, err := ReplayStage(root, "svc/Dockerfile", "build", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lib/go.mod", "lib/go.sum", "svc/main.go", "svc/sub/x.go", "Makefile", "renamed.go"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("%s not copied: %v", want, err)
		}
	}
	for _, absent := range []string{"lib/lib.go", "svc/secret.env"} {
		if _, err := os.Stat(filepath.Join(dir, absent)); err == nil {
			t.Errorf("%s copied, want it left out", absent)
		}
	}
	if !slices.Equal(st.Targets, []string{"build-svc"}) || !slices.Equal(st.Env, []string{"GOWORK=off"}) {
		t.Errorf("targets %v env %v, want [build-svc] [GOWORK=off]", st.Targets, st.Env)
	}
}
