package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

// dbImport is `matcher db import FILE`: the air-gap path. It reads only the
// file and the data directory; nothing here opens a network connection.
func dbImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matcher db import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := envLookup(getenv)
	var dataDir, checksum string
	var maxArchive, maxDB int64
	var timeout time.Duration
	bindDataDir(fs, &dataDir, env)
	bindLimits(fs, &maxArchive, &maxDB, &timeout, env)
	fs.StringVar(&checksum, "checksum", "", "expected archive checksum, sha256:<hex> (as in Grype's listing)")
	force := fs.Bool("force", false, "activate even if the DB is not newer than the active one (rollback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: matcher db import [flags] FILE")
	}
	store, err := vulndb.Open(dataDir, vulndb.Options{
		Limits: vulndb.Limits{MaxArchiveBytes: maxArchive, MaxDBBytes: maxDB, MaxImportTime: timeout},
		Logger: slog.New(slog.NewJSONHandler(stderr, nil)),
	})
	if errors.Is(err, vulndb.ErrLocked) {
		return fmt.Errorf("%w: a running matcher holds it; upload with POST /api/v1/vulndb/import instead", err)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	db, err := store.Import(ctx, fs.Arg(0), vulndb.ImportOptions{Checksum: checksum, Force: *force})
	if err != nil {
		return fmt.Errorf("import %s: %w", fs.Arg(0), err)
	}
	return printJSON(stdout, status(db))
}

// dbStatus is `matcher db status`: the active DB as JSON. It takes no lock,
// so it works next to a running server.
func dbStatus(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matcher db status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var dataDir string
	bindDataDir(fs, &dataDir, envLookup(getenv))
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := vulndb.ReadActive(dataDir)
	if err != nil {
		return fmt.Errorf("%s: %w", dataDir, err)
	}
	return printJSON(stdout, status(db))
}

// statusJSON is the printed form of a DB.
type statusJSON struct {
	vulndb.DB
	Path       string  `json:"path"`
	AgeSeconds float64 `json:"ageSeconds"`
}

func status(db vulndb.DB) statusJSON {
	return statusJSON{DB: db, Path: db.Dir, AgeSeconds: time.Since(db.Built).Round(time.Second).Seconds()}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
