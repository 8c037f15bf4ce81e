package controlplane

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:embed stages/*.yaml
var stageFS embed.FS

// writeStages writes kwok's Stage manifests into one multi-document file.
func writeStages(dir string) (string, error) {
	entries, err := stageFS.ReadDir("stages")
	if err != nil {
		return "", err
	}
	var docs []string
	for _, e := range entries {
		b, err := stageFS.ReadFile("stages/" + e.Name())
		if err != nil {
			return "", err
		}
		docs = append(docs, strings.TrimSpace(string(b)))
	}
	path := filepath.Join(dir, "kwok-stages.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write kwok stages: %w", err)
	}
	return path, nil
}
