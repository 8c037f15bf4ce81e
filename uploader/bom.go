package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// errInvalidReport marks every problem with the report file itself.
var errInvalidReport = errors.New("report invalid")

// readReport reads path (at most maxBytes), checks that it is CycloneDX JSON
// and returns its bytes.
func readReport(path string, maxBytes int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidReport, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", errInvalidReport, path, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", errInvalidReport, path, maxBytes)
	}
	if err := checkCycloneDX(data); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errInvalidReport, path, err)
	}
	return data, nil
}

// checkCycloneDX accepts a JSON object with bomFormat "CycloneDX" and a
// specVersion. It does not validate the rest of the schema: results-api does
// that, and a 4xx from it is reported as a rejection.
func checkCycloneDX(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty file")
	}
	var head struct {
		BOMFormat   *string `json:"bomFormat"`
		SpecVersion *string `json:"specVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case head.BOMFormat == nil:
		return errors.New(`no "bomFormat": not a CycloneDX BOM (is it Grype's native JSON or SPDX?)`)
	case *head.BOMFormat != "CycloneDX":
		return fmt.Errorf("bomFormat is %q, want \"CycloneDX\"", *head.BOMFormat)
	case head.SpecVersion == nil || strings.TrimSpace(*head.SpecVersion) == "":
		return errors.New(`no "specVersion"`)
	}
	return nil
}

// body is the report as sent: compressed once, every attempt resends the
// same bytes.
type body struct {
	data     []byte
	encoding string // its Content-Encoding
}

// zstdBody compresses the report as results-api stores it: one zstd frame
// that declares its size, SpeedFastest, a 1 MiB window. results-api keeps
// such a frame as it came instead of compressing the report again, and
// zstd decodes ~3x as fast as gzip inflates (issue 30).
func zstdBody(data []byte) (body, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20),
		zstd.WithEncoderConcurrency(1))
	if err != nil {
		return body{}, err
	}
	defer enc.Close()
	return body{data: enc.EncodeAll(data, nil), encoding: "zstd"}, nil
}

// gzipBody compresses the report for a results-api that does not accept
// zstd (before issue 30's change): 415 to a zstd body.
func gzipBody(data []byte) (body, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return body{}, err
	}
	if _, err := zw.Write(data); err != nil {
		return body{}, err
	}
	if err := zw.Close(); err != nil {
		return body{}, err
	}
	return body{data: buf.Bytes(), encoding: "gzip"}, nil
}

// errTokenInvalid marks a missing, unreadable or empty token file.
var errTokenInvalid = errors.New("token invalid")

// readToken reads a bearer token file (at most 64 KiB), trimming whitespace.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errTokenInvalid, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10+1))
	if err != nil {
		return "", fmt.Errorf("%w: read %s: %w", errTokenInvalid, path, err)
	}
	if len(data) > 64<<10 {
		return "", fmt.Errorf("%w: %s is larger than 64 KiB", errTokenInvalid, path)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("%w: %s is empty or has more than one line", errTokenInvalid, path)
	}
	return tok, nil
}
