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
	"github.com/klauspost/compress/zstd"
)

// Input errors; the HTTP layer maps each to a status code.
var (
	ErrEmpty               = errors.New("empty body")
	ErrTooLarge            = errors.New("body too large")
	ErrUnsupportedEncoding = errors.New("unsupported content encoding")
	ErrBadGzip             = errors.New("body is not valid gzip")
	ErrBadZstd             = errors.New("body is not valid zstd")
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
// or zstd stream. A compressed stream is read whole before it is
// decompressed: it is small (a tenth of the BOM, typically), and it
// declares the decompressed size (gzip's trailer, zstd's frame header), so
// the caller can reserve memory for exactly that (Size) before Decode
// allocates it, and a bomb is refused unread.
type Wire struct {
	data []byte
	enc  wireEncoding
	size int64
	// zstd: the frame header, and whether the body is that one frame
	// and nothing else (Frame).
	head     zstd.Header
	oneFrame bool
}

type wireEncoding int

const (
	identity wireEncoding = iota
	gzipped
	zstdFramed
)

// ReadWire reads an upload of at most max bytes as sent; sizeHint (the
// Content-Length, or -1) sizes the buffer. Content encodings other than
// gzip, zstd and identity fail with ErrUnsupportedEncoding before
// anything is read; a gzip stream or zstd frame declaring more than max
// bytes fails with ErrTooLarge.
func ReadWire(r io.Reader, contentEncoding string, sizeHint, max int64) (*Wire, error) {
	w := &Wire{}
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip", "x-gzip":
		w.enc = gzipped
	case "zstd":
		w.enc = zstdFramed
	default:
		return nil, fmt.Errorf("%w %q: use zstd, gzip or none", ErrUnsupportedEncoding, contentEncoding)
	}
	if r == nil {
		return nil, ErrEmpty
	}
	var err error
	if w.data, err = readAll(r, sizeHint, max); err != nil {
		return nil, err
	}
	w.size = int64(len(w.data))
	switch w.enc {
	case gzipped:
		// RFC 1952: the last 4 bytes are ISIZE, the decompressed size
		// modulo 2^32. Decode stops after that many bytes, so a stream
		// that lies (or wraps around 4 GiB) fails there, never beyond.
		if len(w.data) < 18 || w.data[0] != 0x1f || w.data[1] != 0x8b {
			return nil, fmt.Errorf("%w: no gzip header", ErrBadGzip)
		}
		w.size = int64(binary.LittleEndian.Uint32(w.data[len(w.data)-4:]))
		if w.size > max {
			return nil, fmt.Errorf("%w: the gzip stream declares %d bytes, the limit is %d", ErrTooLarge, w.size, max)
		}
	case zstdFramed:
		if err := w.readZstdHeader(max); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// readZstdHeader checks a zstd body's first frame header (RFC 8878): a
// data frame, without a dictionary, that declares its content size, at
// most max bytes. Decode then holds the body to that size: a second frame
// cannot add to it. The frame's window costs nothing more: a whole-buffer
// decode uses its output as the window.
func (w *Wire) readZstdHeader(max int64) error {
	h := &w.head
	if err := h.Decode(w.data); err != nil {
		return fmt.Errorf("%w: %w", ErrBadZstd, err)
	}
	switch {
	case h.Skippable:
		return fmt.Errorf("%w: the body starts with a skippable frame, not the BOM's", ErrBadZstd)
	case h.DictionaryID != 0:
		return fmt.Errorf("%w: the frame needs dictionary %d (dictionaries are not accepted)", ErrBadZstd, h.DictionaryID)
	case !h.HasFCS:
		return fmt.Errorf("%w: the frame does not declare its content size (zstd writes it when it compresses a whole buffer)", ErrBadZstd)
	case h.FrameContentSize > uint64(max):
		return fmt.Errorf("%w: the zstd frame declares %d bytes, the limit is %d", ErrTooLarge, h.FrameContentSize, max)
	}
	w.size = int64(h.FrameContentSize)
	n, err := zstdFrameLen(w.data, h)
	w.oneFrame = err == nil && n == len(w.data)
	return nil
}

// Len is the number of bytes read from the wire.
func (w *Wire) Len() int64 { return int64(len(w.data)) }

// Size is the BOM's size: the body's length, or what its gzip trailer or
// zstd frame declares. Decode never returns more.
func (w *Wire) Size() int64 { return w.size }

// Frame returns a zstd upload's bytes when the body is exactly one zstd
// frame (nothing before or after it), with the window its decoder holds;
// nil otherwise. Once Decode has succeeded the frame decodes to exactly
// the BOM's bytes, so it can be stored as it came instead of compressed
// again.
func (w *Wire) Frame() (frame []byte, window int64) {
	if w.enc != zstdFramed || !w.oneFrame {
		return nil, 0
	}
	if w.head.SingleSegment {
		return w.data, int64(w.head.FrameContentSize)
	}
	return w.data, int64(w.head.WindowSize)
}

// zdec decodes every zstd upload (DecodeAll is safe for concurrent use;
// GOMAXPROCS of them run at once). The cap limit holds each decode to the
// buffer Decode sizes from the declared content size.
var zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true))

// Decode returns the BOM's bytes, decompressing a gzip stream (one
// member, nothing after it) or zstd frames into a buffer of exactly Size
// bytes.
func (w *Wire) Decode() ([]byte, error) {
	var out []byte
	var err error
	switch w.enc {
	case identity:
		return w.data, nil
	case gzipped:
		out, err = w.gunzip()
	case zstdFramed:
		out, err = zdec.DecodeAll(w.data, make([]byte, 0, w.size))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadZstd, err)
		}
		if int64(len(out)) != w.size {
			return nil, fmt.Errorf("%w: %d bytes decoded, the frame declares %d", ErrBadZstd, len(out), w.size)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrEmpty
	}
	return out, nil
}

func (w *Wire) gunzip() ([]byte, error) {
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
	return out, nil
}

// zstdFrameLen is the length of the zstd data frame at the start of data
// whose header is h (RFC 8878 3.1.1): the header, its blocks up to the
// last, and the content checksum when the header says there is one.
func zstdFrameLen(data []byte, h *zstd.Header) (int, error) {
	i := h.HeaderSize
	for {
		if i+3 > len(data) {
			return 0, io.ErrUnexpectedEOF
		}
		bh := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16
		i += 3
		size := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 1: // RLE: one byte, repeated size times
			size = 1
		case 3:
			return 0, errors.New("reserved block type")
		}
		i += size
		if bh&1 == 1 { // the last block
			break
		}
	}
	if h.HasCheckSum {
		i += 4
	}
	if i > len(data) {
		return 0, io.ErrUnexpectedEOF
	}
	return i, nil
}

// ReadBody reads an upload, decompressing it when contentEncoding is gzip
// or zstd, and fails with ErrTooLarge when it holds more than max decompressed
// bytes, so neither a huge body nor a compression bomb is ever held in memory.
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
