package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip" // the standard library's API, inflating ~1.5x as fast
)

// Input errors; the HTTP layer maps each to a status code.
var (
	ErrEmpty               = errors.New("empty body")
	ErrTooLarge            = errors.New("body too large")
	ErrUnsupportedEncoding = errors.New("unsupported content encoding")
	ErrBadGzip             = errors.New("body is not valid gzip")
	ErrNotJSON             = errors.New("body is not JSON")
	ErrNotCycloneDX        = errors.New("body is not a CycloneDX BOM")
	ErrInvalidBOM          = errors.New("invalid CycloneDX BOM")
	ErrTooManyFindings     = errors.New("too many findings")
	ErrIncomplete          = errors.New("the body ended before its Content-Length")
	ErrBodyTimeout         = errors.New("the body did not arrive before the deadline")
)

// DefaultMaxBytes is the default limit on a BOM's decompressed size.
const DefaultMaxBytes = 32 << 20

// Wire is an upload as it came over the wire: the BOM itself, or its gzip
// stream. A gzip stream is read whole before it is decompressed: it is
// small (a tenth of the BOM, typically), and its trailer declares the
// decompressed size, so the caller can reserve memory for exactly that
// (Size) before Decode allocates it, and a gzip bomb is refused unread.
type Wire struct {
	data []byte
	gzip bool
	size int64
}

// ReadWire reads an upload of at most max bytes as sent; sizeHint (the
// Content-Length, or -1) sizes the buffer. Content encodings other than
// gzip and identity fail with ErrUnsupportedEncoding before anything is
// read, and a gzip stream declaring more than max bytes fails with
// ErrTooLarge.
func ReadWire(r io.Reader, contentEncoding string, sizeHint, max int64) (*Wire, error) {
	w := &Wire{}
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip", "x-gzip":
		w.gzip = true
	default:
		return nil, fmt.Errorf("%w %q: use gzip or none", ErrUnsupportedEncoding, contentEncoding)
	}
	if r == nil {
		return nil, ErrEmpty
	}
	var err error
	if w.data, err = readAll(r, sizeHint, max); err != nil {
		return nil, err
	}
	w.size = int64(len(w.data))
	if !w.gzip {
		return w, nil
	}
	// RFC 1952: the last 4 bytes are ISIZE, the decompressed size modulo
	// 2^32. Decode stops after that many bytes, so a stream that lies
	// (or wraps around 4 GiB) fails there, never beyond.
	if len(w.data) < 18 || w.data[0] != 0x1f || w.data[1] != 0x8b {
		return nil, fmt.Errorf("%w: no gzip header", ErrBadGzip)
	}
	w.size = int64(binary.LittleEndian.Uint32(w.data[len(w.data)-4:]))
	if w.size > max {
		return nil, fmt.Errorf("%w: the gzip stream declares %d bytes, the limit is %d", ErrTooLarge, w.size, max)
	}
	return w, nil
}

// Len is the number of bytes read from the wire.
func (w *Wire) Len() int64 { return int64(len(w.data)) }

// Size is the BOM's size: the body's length, or what its gzip trailer
// declares. Decode never returns more.
func (w *Wire) Size() int64 { return w.size }

// Decode returns the BOM's bytes, decompressing a gzip stream (one
// member, nothing after it) into a buffer of exactly Size bytes.
func (w *Wire) Decode() ([]byte, error) {
	if !w.gzip {
		return w.data, nil
	}
	br := bytes.NewReader(w.data)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadGzip, err)
	}
	defer zr.Close()
	zr.Multistream(false)
	out := make([]byte, w.size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadGzip, err)
	}
	// The declared size is reached: the member must end exactly here.
	var one [1]byte
	if n, err := zr.Read(one[:]); n > 0 {
		return nil, fmt.Errorf("%w: more data than the gzip trailer declares", ErrBadGzip)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w", ErrBadGzip, err)
	}
	if br.Len() > 0 {
		return nil, fmt.Errorf("%w: %d bytes after the gzip stream (concatenated members are not accepted)", ErrBadGzip, br.Len())
	}
	if len(out) == 0 {
		return nil, ErrEmpty
	}
	return out, nil
}

// ReadBody reads an upload, decompressing it when contentEncoding is gzip,
// and fails with ErrTooLarge when it holds more than max decompressed
// bytes, so neither a huge body nor a gzip bomb is ever held in memory.
func ReadBody(r io.Reader, contentEncoding string, max int64) ([]byte, error) {
	w, err := ReadWire(r, contentEncoding, -1, max)
	if err != nil {
		return nil, err
	}
	return w.Decode()
}

// readAll reads at most max bytes from r into a buffer of sizeHint bytes
// when that is known, so a body is held once, not in doubling copies.
func readAll(r io.Reader, sizeHint, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if sizeHint > 0 && sizeHint <= max {
		buf.Grow(int(sizeHint) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	switch {
	case isTooLarge(err) || n > max:
		return nil, fmt.Errorf("%w: limit is %d bytes", ErrTooLarge, max)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, ErrIncomplete
	case errors.Is(err, os.ErrDeadlineExceeded): // the connection's read deadline
		return nil, ErrBodyTimeout
	case err != nil:
		return nil, fmt.Errorf("read body: %w", err)
	case n == 0:
		return nil, ErrEmpty
	}
	return buf.Bytes(), nil
}

// isTooLarge recognises http.MaxBytesReader's error.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
