package rematch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ProgressFile is the name of the file a Pass keeps its progress in.
const ProgressFile = "rematch-progress.json"

// progress is a pass's state on disk. Reports are listed in a stable order
// in pages; Cursor names the page being worked on and Done the reports of
// that page already handled, so a pass killed at any point redoes at most
// the reports that were in flight. A redone report whose upload had landed
// is seen as current (its stored dbBuilt is this DB's) and skipped.
type progress struct {
	Version   int       `json:"version"`
	DBBuilt   time.Time `json:"dbBuilt"`
	DBSchema  string    `json:"dbSchema"`
	StartedAt time.Time `json:"startedAt"`
	Cursor    string    `json:"cursor,omitempty"`
	Done      []string  `json:"done,omitempty"`
	// Uploading lists the reports whose upload started and is not recorded
	// in Done yet: if one is found current on resume, its upload landed
	// and it counts as changed.
	Uploading  []string   `json:"uploading,omitempty"`
	Counts     Counts     `json:"counts"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
}

const progressVersion = 1

// forDB reports whether p is the progress of a pass over db.
func (p *progress) forDB(db DB) bool {
	return p != nil && p.Version == progressVersion && p.DBBuilt.Equal(db.Built) && p.DBSchema == db.Schema
}

func loadProgress(dir string) (*progress, error) {
	b, err := os.ReadFile(filepath.Join(dir, ProgressFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read progress: %w", err)
	}
	var p progress
	if err := json.Unmarshal(b, &p); err != nil {
		// A torn file cannot happen (saveProgress renames), but a hand-edited
		// one can: start over rather than refuse to run.
		return nil, nil //nolint:nilerr // an unreadable progress file means no progress
	}
	return &p, nil
}

// saveProgress replaces the progress file atomically and durably: written
// to a temporary file, synced, renamed over the old one, directory synced.
func saveProgress(dir string, p *progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ProgressFile+".*")
	if err != nil {
		return fmt.Errorf("save progress: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
		work.fsyncs.Add(1)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ProgressFile))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save progress: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		work.fsyncs.Add(1)
		_ = d.Close()
	}
	return nil
}
