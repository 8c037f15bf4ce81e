package ingest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
)

// DefaultMaxBytes is the default limit on a BOM's decompressed size.
const DefaultMaxBytes = 32 << 20

// ReadBody reads an upload, decompressing it when contentEncoding is gzip,
// and fails with ErrTooLarge as soon as more than max decompressed bytes
// arrive, so neither a huge body nor a gzip bomb is ever held in memory.
func ReadBody(r io.Reader, contentEncoding string, max int64) ([]byte, error) {
	if r == nil {
		return nil, ErrEmpty
	}
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, ErrEmpty
			}
			if isTooLarge(err) {
				return nil, ErrTooLarge
			}
			return nil, fmt.Errorf("%w: %w", ErrBadGzip, err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("%w %q: use gzip or none", ErrUnsupportedEncoding, contentEncoding)
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	switch {
	case isTooLarge(err) || n > max:
		return nil, fmt.Errorf("%w: limit is %d bytes", ErrTooLarge, max)
	case errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: %w", ErrBadGzip, err)
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
