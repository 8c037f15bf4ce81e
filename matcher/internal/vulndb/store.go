package vulndb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Errors an import or fetch can end with; the active DB is untouched by all
// of them.
var (
	ErrChecksum = errors.New("archive checksum does not match")
	ErrCorrupt  = errors.New("archive is corrupt or not a supported DB archive")
	ErrNotDB    = errors.New("not a Grype vulnerability DB")
	ErrSchema   = errors.New("unsupported DB schema")
	ErrNotNewer = errors.New("DB is not newer than the active DB")
	ErrTooLarge = errors.New("over the size limit")
	ErrLocked   = errors.New("data directory is in use by another matcher process")
	ErrNoDB     = errors.New("no active vulnerability DB")
	ErrTimeout  = errors.New("import took longer than its deadline")
)

// Refused reports whether err refuses the archive itself (checksum, format,
// content, schema, age, size or the time it takes to unpack) rather than
// failing on this side.
func Refused(err error) bool {
	return errorsIsAny(err, ErrChecksum, ErrCorrupt, ErrNotDB, ErrSchema, ErrNotNewer, ErrTooLarge, ErrTimeout)
}

// Names in the data directory.
const (
	currentLink  = "current"
	previousLink = "previous"
	dbsDir       = "db"
	tmpDir       = "tmp"
	lockFile     = "lock"
	metaFile     = "db.json"
)

// DB describes one imported DB.
type DB struct {
	// Dir holds vulnerability.db (hydrated) and import.json: open it with
	// Grype's v6 reader (v6.Config{DBDirPath: Dir}).
	Dir string `json:"-"`
	// ID names the DB in the data directory: build time and checksum.
	ID string `json:"id"`
	// Archive is the file name of the archive as imported, in Grype's naming
	// (vulnerability-db_v6…); ArchivePath is where it is stored.
	Archive     string `json:"archive"`
	ArchivePath string `json:"-"`
	// Size is the archive's size in bytes.
	Size int64 `json:"size"`
	// Checksum is the archive's digest in Grype's listing format, "sha256:<hex>".
	Checksum string `json:"checksum"`
	// Built is the DB's build time (UTC, seconds).
	Built time.Time `json:"built"`
	// Schema is the DB's schema version, e.g. "v6.1.10".
	Schema string `json:"schema"`
	// Source says where it came from: an upstream URL (without credentials
	// or query), "upload" or "file".
	Source string `json:"source"`
	// Imported is when this store activated it.
	Imported time.Time `json:"imported"`
}

// Limits bound what an import reads and writes.
type Limits struct {
	// MaxArchiveBytes caps a downloaded or uploaded archive. Zero means 2 GiB
	// (Grype's public v6 archives are well under 500 MB).
	MaxArchiveBytes int64
	// MaxDBBytes caps the unpacked vulnerability.db. Zero means 8 GiB.
	MaxDBBytes int64
	// MaxImportTime bounds one import, from taking the import lock to
	// activation. Zero means 30 minutes.
	MaxImportTime time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxImportTime <= 0 {
		l.MaxImportTime = 30 * time.Minute
	}
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = 2 << 30
	}
	if l.MaxDBBytes <= 0 {
		l.MaxDBBytes = 8 << 30
	}
	return l
}

// Options configure a Store.
type Options struct {
	Limits Limits
	// Upstream is where Fetch looks; the zero value fetches nothing.
	Upstream Upstream
	// OnActivate is called after a DB became active, once per activation,
	// from the goroutine that imported it and after the store's lock is
	// released. This is where the re-match pass and the
	// crowsnest.vulndb.updated event hook in. It must not block for long.
	OnActivate func(DB)
	Logger     *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	// crash, when set, is called at each step of an activation; tests use
	// it to kill the process there.
	crash func(step string)
}

// Upstream is a DB listing in Grype's format.
type Upstream struct {
	// URL is Grype's update URL (listing at URL/v6/latest.json) or the
	// listing's own URL ending in .json.
	URL string
	// Client makes the requests; nil means a client with no overall timeout
	// (each request has its own, below). Its redirect policy is narrowed:
	// redirects stay on the upstream's host and on HTTPS.
	Client *http.Client
	// AllowInsecure lets the upstream (and its redirects) be plain HTTP:
	// for a mirror inside a trusted network or a test, never the internet.
	AllowInsecure bool
	// ListingTimeout bounds the listing request; zero means 30 s.
	ListingTimeout time.Duration
	// DownloadTimeout bounds the archive download; zero means 10 min.
	DownloadTimeout time.Duration
}

// Store is a DB volume opened for writing. Its methods are safe for
// concurrent use; imports run one at a time.
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *os.File

	importMu sync.Mutex // one import at a time

	mu       sync.RWMutex
	active   *DB
	previous *DB
}

// Open opens (creating if needed) the data directory dir for writing: it
// takes the directory's lock, so a second process gets ErrLocked, and
// removes whatever an import killed midway left behind.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Limits = opts.Limits.withDefaults()
	for _, d := range []string{dir, filepath.Join(dir, dbsDir), filepath.Join(dir, tmpDir)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	s := &Store{dir: dir, opts: opts, log: opts.Logger, lock: lock}
	if err := s.recover(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the data directory's lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // closing the descriptor drops the flock
	s.lock = nil
	return err
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.dir }

// Active returns the active DB; false when there is none yet.
func (s *Store) Active() (DB, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.active == nil {
		return DB{}, false
	}
	return *s.active, true
}

// Previous returns the DB the active one replaced; false when there is none.
func (s *Store) Previous() (DB, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.previous == nil {
		return DB{}, false
	}
	return *s.previous, true
}

// ReadActive reads the active DB of the data directory dir without taking
// its lock (for status commands while a server runs); ErrNoDB when there is
// none.
func ReadActive(dir string) (DB, error) {
	db, err := readLink(dir, currentLink)
	if err != nil {
		return DB{}, err
	}
	if db == nil {
		return DB{}, ErrNoDB
	}
	return *db, nil
}

// recover empties tmp/, drops half-written symlinks and loads current and
// previous, then prunes DB directories neither points at (a DB renamed into
// db/ by an import killed before the swap).
func (s *Store) recover() error {
	tmp := filepath.Join(s.dir, tmpDir)
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			return fmt.Errorf("clean %s: %w", tmp, err)
		}
	}
	for _, name := range []string{currentLink, previousLink} {
		if err := os.Remove(filepath.Join(s.dir, name+".new")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	cur, err := readLink(s.dir, currentLink)
	if err != nil {
		return fmt.Errorf("read active DB: %w", err)
	}
	prev, err := readLink(s.dir, previousLink)
	if err != nil {
		// The previous DB is only a fallback; do not refuse to start over it.
		s.log.Warn("ignoring unreadable previous DB", "error", err)
		prev = nil
	}
	if prev != nil && cur != nil && prev.ID == cur.ID {
		prev = nil // killed between the two symlink swaps
	}
	s.active, s.previous = cur, prev
	return s.prune()
}

// readLink loads the DB a symlink in dir points at; nil when the link does
// not exist.
func readLink(dir, name string) (*DB, error) {
	target, err := os.Readlink(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dbDir := filepath.Join(dir, target)
	db, err := readMeta(dbDir)
	if err != nil {
		return nil, fmt.Errorf("%s -> %s: %w", name, target, err)
	}
	return db, nil
}

func readMeta(dbDir string) (*DB, error) {
	f, err := os.Open(filepath.Join(dbDir, metaFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var db DB
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&db); err != nil {
		return nil, fmt.Errorf("decode %s: %w", metaFile, err)
	}
	db.Dir = dbDir
	db.ArchivePath = filepath.Join(dbDir, filepath.Base(db.Archive))
	return &db, nil
}
