package vulndb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// activate points previous at the active DB and current at db, each with a
// symlink written beside the old one and renamed over it (rename is atomic,
// so a reader or a restart sees the old link or the new one), then prunes.
func (s *Store) activate(db DB) error {
	s.mu.RLock()
	old := s.active
	s.mu.RUnlock()
	if old != nil {
		if err := s.swapLink(previousLink, old.ID); err != nil {
			return fmt.Errorf("record previous DB: %w", err)
		}
		s.crash("previous")
	}
	if err := s.swapLink(currentLink, db.ID); err != nil {
		return fmt.Errorf("activate DB: %w", err)
	}
	s.crash("current")
	s.mu.Lock()
	s.previous, s.active = old, &db
	s.mu.Unlock()
	if err := s.prune(); err != nil {
		// The new DB is active; a leftover directory goes at the next prune.
		s.log.Warn("prune old vulnerability DBs", "error", err)
	}
	s.crash("pruned")
	return nil
}

func (s *Store) swapLink(name, id string) error {
	link := filepath.Join(s.dir, name)
	tmp := link + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Symlink(filepath.Join(dbsDir, id), tmp); err != nil {
		return err
	}
	s.crash(name + ".new")
	if err := os.Rename(tmp, link); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// prune removes DB directories that are neither current nor previous.
func (s *Store) prune() error {
	s.mu.RLock()
	keep := map[string]bool{}
	for _, db := range []*DB{s.active, s.previous} {
		if db != nil {
			keep[db.ID] = true
		}
	}
	s.mu.RUnlock()
	dir := filepath.Join(s.dir, dbsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		s.log.Info("pruned vulnerability DB", "db", e.Name())
	}
	return errors.Join(errs...)
}

// syncTree flushes every regular file directly in dir, then dir itself.
func syncTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := syncPath(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func syncDir(dir string) error { return syncPath(dir) }

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(p), err)
	}
	return nil
}
