package dbwrite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/anchore/grype/grype/db/v6/distribution"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// ListingDir is the directory of a DB upstream that holds the v6 listing and
// archives: Grype's client asks for <update URL>/v6/latest.json
// (distribution.Client, latestURL) and resolves the listing's archive path
// relative to it.
const ListingDir = "v6"

// WriteListing writes Grype's listing document (latest.json, a
// distribution.LatestDocument) for the newest of archives.
func WriteListing(w io.Writer, archives ...distribution.Archive) error {
	doc := distribution.NewLatestDocument(archives...)
	if doc == nil {
		return errors.New("no v6 archive to list")
	}
	return doc.Write(w)
}

// Upstream is a DB upstream written to disk: serve Root with a file server
// and point Grype's update URL (or the matcher's --upstream-url) at it.
type Upstream struct {
	Root        string               // serve this directory
	ListingPath string               // Root/v6/latest.json
	ArchivePath string               // Root/v6/vulnerability-db_v6….tar.zst
	Archive     distribution.Archive // the listing's entry
}

// WriteUpstream writes a DB of advs built at built, packages it and lists it
// under root, laid out like Grype's public DB site: root/v6/latest.json next
// to the archive it names.
func WriteUpstream(root string, advs []advisory.Advisory, built time.Time) (Upstream, error) {
	work, err := os.MkdirTemp("", "dbwrite-")
	if err != nil {
		return Upstream{}, err
	}
	defer os.RemoveAll(work)
	if _, err := Write(work, advs, built); err != nil {
		return Upstream{}, err
	}
	dir := filepath.Join(root, ListingDir)
	a, path, err := WriteArchive(work, dir)
	if err != nil {
		return Upstream{}, err
	}
	listing := filepath.Join(dir, distribution.LatestFileName)
	if err := writeFile(listing, func(w io.Writer) error { return WriteListing(w, *a) }); err != nil {
		return Upstream{}, fmt.Errorf("write listing: %w", err)
	}
	return Upstream{Root: root, ListingPath: listing, ArchivePath: path, Archive: *a}, nil
}

func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return write(f)
}
