package vulndb

import (
	"context"
	"fmt"
	"io"

	"github.com/mholt/archives"
)

// unpackSlack is what an archive may decompress to beyond the DB limit: tar
// headers, padding, import.json. Grype's archives hold those two files and
// nothing else, a few KiB beyond the DB itself.
const unpackSlack = 16 << 20

// decompressed opens the tar stream inside an identified archive: the
// decompressor of a compressed tar, the stream itself for a plain one.
// Decompressing here rather than inside archives' Extract is what lets
// unpack count and bound the decompressed bytes.
func decompressed(format archives.Format, stream io.Reader) (io.ReadCloser, error) {
	switch f := format.(type) {
	case archives.Tar:
		return io.NopCloser(stream), nil
	case archives.CompressedArchive:
		if _, ok := f.Extraction.(archives.Tar); !ok || f.Compression == nil {
			break
		}
		rc, err := f.Compression.OpenReader(stream)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w: %w", format.Extension(), ErrCorrupt, err)
		}
		return rc, nil
	}
	return nil, fmt.Errorf("%s cannot be extracted: %w", format.Extension(), ErrCorrupt)
}

// boundedReader reads an archive's decompressed stream. It fails with
// ErrTooLarge once more than max bytes came through and with the context's
// cause once the context is done, so neither a decompression bomb nor a
// slow one holds the import lock past its limits.
type boundedReader struct {
	ctx       context.Context
	r         io.Reader
	left, max int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.ctx.Err() != nil {
		return 0, context.Cause(b.ctx)
	}
	if b.left <= 0 {
		// One byte more tells a stream of exactly max bytes from a longer one.
		var one [1]byte
		n, err := io.ReadFull(b.r, one[:])
		if n > 0 {
			return 0, fmt.Errorf("archive unpacks to over %d bytes (kept and skipped entries alike): %w", b.max, ErrTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
