package support

import (
	"errors"
	"os"
	"path/filepath"
)

// RepoRoot walks up from the working directory to the folder holding go.work,
// which is the root of the Crowsnest checkout.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory")
		}
		dir = parent
	}
}
