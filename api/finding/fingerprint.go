package finding

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
)

// Fingerprint is a SHA-256 over every field of every finding, independent
// of their order: two lists with the same fingerprint hold the same
// findings. results-api stores it with a report's findings rows (a
// replacement with the same fingerprint keeps the rows) and lists it with
// the report; the matcher compares it to tell an unchanged re-match.
func Fingerprint(fs []Finding) []byte {
	sums := make([][sha256.Size]byte, len(fs))
	var buf []byte
	for i := range fs {
		f := &fs[i]
		buf = buf[:0]
		for _, s := range []string{f.ID, f.Source, f.CVSSVector, f.Package.Name, f.Package.Version, f.Package.Type,
			f.Package.PURL, f.Description, f.URL} {
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		}
		buf = append(buf, byte(f.Severity))
		if f.CVSSScore != nil {
			buf = binary.BigEndian.AppendUint64(append(buf, 1), math.Float64bits(*f.CVSSScore))
		} else {
			buf = append(buf, 0)
		}
		buf = binary.AppendUvarint(buf, uint64(len(f.FixedIn)))
		for _, v := range f.FixedIn {
			buf = binary.AppendUvarint(buf, uint64(len(v)))
			buf = append(buf, v...)
		}
		// Risk only when rated, so an unrated finding keeps the
		// fingerprint it had before findings carried risk.
		if f.Risk.Rated() {
			buf = append(buf, 'r')
			if f.Risk.EPSS != nil {
				buf = binary.BigEndian.AppendUint64(append(buf, 1), math.Float64bits(*f.Risk.EPSS))
			}
			if f.Risk.KEV {
				buf = append(buf, 'k')
			}
			buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(f.Risk.Score))
		}
		sums[i] = sha256.Sum256(buf)
	}
	slices.SortFunc(sums, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for i := range sums {
		h.Write(sums[i][:])
	}
	return h.Sum(nil)
}
