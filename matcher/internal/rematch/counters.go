package rematch

import (
	"bytes"
	"sync/atomic"
)

// work counts what re-matching costs besides matching itself, so that a
// benchmark reads it without timing noise (BenchmarkPass): the bytes of
// BOM JSON parsed (our decodes and Grype's, including its format
// detection), the reports encoded, the fsyncs, the SQL statements Grype's
// DB store ran (countingPool), and of the vulnerability rows read by id
// with a blob (each of which Grype decoded before rowsByID attached blobs)
// the blobs decoded: by rowsByID, or left to Grype (a row handed back
// without its blob, which Grype decodes next). Atomic adds, no locks.
var work struct {
	bomBytesParsed atomic.Int64
	encodes        atomic.Int64
	fsyncs         atomic.Int64
	sqlStatements  atomic.Int64
	blobRows       atomic.Int64
	blobDecodes    atomic.Int64
}

// parsedReader reads a BOM, counting the bytes read: every full parse of
// it reads it once. Only Read and Seek, so that no io.Copy goes around
// Read through bytes.Reader's WriteTo.
type parsedReader struct{ r *bytes.Reader }

func (p parsedReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	work.bomBytesParsed.Add(int64(n))
	return n, err
}

func (p parsedReader) Seek(offset int64, whence int) (int64, error) { return p.r.Seek(offset, whence) }
