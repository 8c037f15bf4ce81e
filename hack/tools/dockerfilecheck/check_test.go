package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCheck(t *testing.T) {
	gomod := "module example.com/svc\n\ngo 1.26\n\nreplace example.com/lib => ../lib\n"
	tests := []struct {
		name       string
		dockerfile string
		want       []string // substrings, one per expected problem
	}{
		{"ok", "FROM golang AS b\nCOPY lib/go.* lib/\nCOPY svc/ svc/\nFROM scratch\nCOPY --from=b /out /out\n", nil},
		{"parent dir brings the replace", "FROM golang\nCOPY . .\n", nil},
		{"missing source", "FROM golang\nCOPY lib/ lib/\nCOPY svc/nope.txt /x\n", []string{"svc/nope.txt: does not exist"}},
		{"glob without match", "FROM golang\nCOPY lib/ lib/\nCOPY svc/*.sum /x/\n", []string{"no file in the build context matches"}},
		{"ignored source", "FROM golang\nCOPY lib/ lib/\nCOPY svc/secret.env /x\n", []string{"excluded by .dockerignore"}},
		{"outside the context", "FROM golang\nCOPY lib/ lib/\nCOPY ../etc/passwd /x\n", []string{"outside the build context"}},
		{"replace not copied", "FROM golang\nCOPY svc/ svc/\n", []string{"replaces example.com/lib with ../lib"}},
		{"parse error", "FROM golang\nCOPY\n", []string{"svc/Dockerfile: instructions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, map[string]string{
				".dockerignore":  "**/*.env\n",
				"lib/go.mod":     "module example.com/lib\n",
				"svc/go.mod":     gomod,
				"svc/main.go":    "package main\n",
				"svc/secret.env": "X=1\n",
				"svc/Dockerfile": tt.dockerfile,
			})
			got, err := Check(root, "svc/Dockerfile")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to mention %q", i, got[i], w)
				}
			}
		})
	}
}

// TestRepositoryDockerfiles runs the check on Crowsnest's own Dockerfiles.
func TestRepositoryDockerfiles(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := FindDockerfiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"operator/Dockerfile", "results-api/Dockerfile", "uploader/Dockerfile"} {
		found := false
		for _, f := range files {
			found = found || f == want
		}
		if !found {
			t.Errorf("%s not found among %q", want, files)
		}
	}
	for _, f := range files {
		problems, err := Check(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}
