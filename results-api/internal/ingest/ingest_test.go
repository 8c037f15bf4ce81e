package ingest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
)

var opts = ingest.Options{Digest: bomtest.Digest(1), Now: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}

// Constructed input: one of each severity, one id in two packages, a
// duplicate match that must collapse, and fixes on some.
func constructedBOM() []byte {
	return bomtest.BOM(
		bomtest.Vuln{ID: "CVE-2026-0001", Severity: "critical", Package: "openssl", Version: "3.0.1", Fix: "3.0.9", Score: 9.8},
		bomtest.Vuln{ID: "CVE-2026-0001", Severity: "critical", Package: "libssl", Version: "3.0.1", Fix: "3.0.9", Score: 9.8},
		bomtest.Vuln{ID: "CVE-2026-0001", Severity: "critical", Package: "libssl", Version: "3.0.1", Fix: "3.0.9", Score: 9.8},
		bomtest.Vuln{ID: "CVE-2026-0002", Severity: "high", Package: "zlib", Version: "1.2"},
		bomtest.Vuln{ID: "CVE-2026-0003", Severity: "medium", Package: "zlib", Version: "1.2", Fix: "1.3"},
		bomtest.Vuln{ID: "CVE-2026-0004", Severity: "low", Package: "musl", Version: "1.2"},
		bomtest.Vuln{ID: "CVE-2026-0005", Severity: "none", Package: "musl", Version: "1.2"},
		bomtest.Vuln{ID: "CVE-2026-0006", Severity: "unknown", Package: "busybox", Version: "1.36"},
	)
}

func TestParseConstructedBOM(t *testing.T) {
	r, err := ingest.Parse(constructedBOM(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := report.Counts{Critical: 2, High: 1, Medium: 1, Low: 1, Negligible: 1, Unknown: 1}
	if r.Counts != want {
		t.Errorf("counts = %+v, want %+v", r.Counts, want)
	}
	if r.Findings != 7 || len(r.FindingList) != 7 {
		t.Errorf("findings = %d (%d listed), want 7: (id, component) pairs, duplicate collapsed", r.Findings, len(r.FindingList))
	}
	if r.Fixable != 3 {
		t.Errorf("fixable = %d, want 3", r.Fixable)
	}
	if r.GrypeVersion != "0.121.2" {
		t.Errorf("grype version = %q", r.GrypeVersion)
	}
	if !r.ScannedAt.Equal(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("scannedAt = %v, want the BOM timestamp", r.ScannedAt)
	}
	if r.Image != "registry.example/demo@"+bomtest.Digest(0) {
		t.Errorf("image from metadata = %q", r.Image)
	}
	f := r.FindingList[0]
	if f.ID != "CVE-2026-0001" || f.Package.Name != "openssl" || f.Package.Type != "apk" || f.Package.Version != "3.0.1" {
		t.Errorf("first finding = %+v", f)
	}
	if len(f.FixedIn) != 1 || f.FixedIn[0] != "3.0.9" {
		t.Errorf("fixedIn = %v, want [3.0.9] from the vers range", f.FixedIn)
	}
	if f.CVSSScore == nil || *f.CVSSScore != 9.8 || !strings.HasPrefix(f.CVSSVector, "CVSS:3.1/") {
		t.Errorf("cvss = %v %q", f.CVSSScore, f.CVSSVector)
	}
}

func TestParseImageFromQueryWins(t *testing.T) {
	o := opts
	o.Image = "ghcr.io/x/y@" + bomtest.Digest(1)
	r, err := ingest.Parse(constructedBOM(), o)
	if err != nil || r.Image != o.Image {
		t.Fatalf("image = %q, err %v", r.Image, err)
	}
}

func TestParseRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want error
	}{
		"not json":          {`{"bomFormat": "CycloneDX",`, ingest.ErrNotJSON},
		"html":              {`<html></html>`, ingest.ErrNotJSON},
		"spdx document":     {`{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","name":"x"}`, ingest.ErrNotCycloneDX},
		"grype native json": {`{"matches":[],"source":{"type":"image"},"descriptor":{"name":"grype"}}`, ingest.ErrNotCycloneDX},
		"no spec version":   {`{"bomFormat":"CycloneDX"}`, ingest.ErrNotCycloneDX},
		"array":             {`[1,2]`, ingest.ErrInvalidBOM},
		"trailing garbage":  {`{"bomFormat":"CycloneDX","specVersion":"1.6"} x`, ingest.ErrNotJSON},
		"vuln without id":   {`{"bomFormat":"CycloneDX","specVersion":"1.6","vulnerabilities":[{"id":""}]}`, ingest.ErrInvalidBOM},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ingest.Parse([]byte(tc.body), opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func TestReadBody(t *testing.T) {
	bom := constructedBOM()
	got, err := ingest.ReadBody(bytes.NewReader(gz(bom)), "gzip", 1<<20)
	if err != nil || !bytes.Equal(got, bom) {
		t.Fatalf("gzip round trip: err %v, equal %v", err, bytes.Equal(got, bom))
	}
	if _, err := ingest.ReadBody(bytes.NewReader(bom), "", int64(len(bom)-1)); !errors.Is(err, ingest.ErrTooLarge) {
		t.Errorf("over limit: %v", err)
	}
	if _, err := ingest.ReadBody(bytes.NewReader(nil), "", 10); !errors.Is(err, ingest.ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	if _, err := ingest.ReadBody(bytes.NewReader(bom), "br", 1<<20); !errors.Is(err, ingest.ErrUnsupportedEncoding) {
		t.Errorf("brotli: %v", err)
	}
	if _, err := ingest.ReadBody(bytes.NewReader(bom), "gzip", 1<<20); !errors.Is(err, ingest.ErrBadGzip) {
		t.Errorf("plain body labelled gzip: %v", err)
	}
	// A gzip bomb: 256 MiB of zeros compresses to about 256 KiB; reading stops
	// at the limit instead of inflating it.
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 256 {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	start := time.Now()
	if _, err := ingest.ReadBody(bytes.NewReader(buf.Bytes()), "gzip", 4<<20); !errors.Is(err, ingest.ErrTooLarge) {
		t.Errorf("gzip bomb: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gzip bomb took %v to reject", d)
	}
}

// A gzip upload declares its decompressed size in its trailer: ReadWire
// reports it before anything is decompressed and refuses one over the
// limit; Decode never produces more than declared, so a trailer that lies
// fails, and so does anything after the gzip member.
func TestReadWireGzipTrailer(t *testing.T) {
	bom := constructedBOM()
	z := gz(bom)
	w, err := ingest.ReadWire(bytes.NewReader(z), "gzip", int64(len(z)), 1<<20)
	if err != nil || w.Size() != int64(len(bom)) || w.Len() != int64(len(z)) {
		t.Fatalf("ReadWire: size %d, len %d, %v; want size %d, len %d", w.Size(), w.Len(), err, len(bom), len(z))
	}
	if got, err := w.Decode(); err != nil || !bytes.Equal(got, bom) {
		t.Fatalf("Decode: equal %v, %v", bytes.Equal(got, bom), err)
	}
	if _, err := ingest.ReadWire(bytes.NewReader(z), "gzip", -1, int64(len(bom)-1)); !errors.Is(err, ingest.ErrTooLarge) {
		t.Errorf("declared size over the limit: %v", err)
	}
	for name, body := range map[string][]byte{
		"trailer declares less": withISize(z, uint32(len(bom)-10)),
		"trailer declares more": withISize(z, uint32(len(bom)+10)),
		"two members":           append(gz(bom[:100]), gz(bom[100:])...),
		// Anything after the member also moves the trailer: here it reads 0.
		"bytes after": append(append([]byte{}, z...), 0, 0, 0, 0),
		// The CRC-32 in the trailer must match what inflates.
		"checksum wrong":   withCRC(z, ^binary.LittleEndian.Uint32(z[len(z)-8:])),
		"deflate data cut": append(append([]byte{}, z[:len(z)/2]...), z[len(z)-8:]...),
	} {
		w, err := ingest.ReadWire(bytes.NewReader(body), "gzip", -1, 1<<20)
		if err == nil {
			_, err = w.Decode()
		}
		if !errors.Is(err, ingest.ErrBadGzip) {
			t.Errorf("%s: %v, want ErrBadGzip", name, err)
		}
	}
}

// withCRC and withISize copy a gzip member with its trailer's CRC-32 or
// ISIZE (the last 8 and 4 bytes) replaced.
func withCRC(z []byte, crc uint32) []byte { return withTrailerWord(z, 8, crc) }

func withISize(z []byte, n uint32) []byte { return withTrailerWord(z, 4, n) }

func withTrailerWord(z []byte, fromEnd int, v uint32) []byte {
	out := append([]byte{}, z...)
	binary.LittleEndian.PutUint32(out[len(out)-fromEnd:], v)
	return out
}

func TestParseMaxFindings(t *testing.T) {
	o := opts
	o.MaxFindings = 6
	if _, err := ingest.Parse(constructedBOM(), o); !errors.Is(err, ingest.ErrTooManyFindings) {
		t.Fatalf("7 findings, cap 6: %v", err)
	}
	o.MaxFindings = 7
	if r, err := ingest.Parse(constructedBOM(), o); err != nil || r.Findings != 7 {
		t.Fatalf("7 findings, cap 7: %v", err)
	}
}

// Plays an uploader that claims its scan ran in 2099: scannedAt is what the
// operator's rescan decision reads, so a future one would keep the report
// fresh for ever. It is clamped to the upload time, and said so when the
// timestamp is further ahead than a clock difference.
func TestParseClampsFutureTimestamp(t *testing.T) {
	at := func(ts string) []byte {
		return bytes.Replace(constructedBOM(), []byte(`"2026-11-01T10:00:00Z"`), []byte(`"`+ts+`"`), 1)
	}
	for name, tc := range map[string]struct {
		timestamp string
		want      time.Time
		warned    bool
	}{
		"in 2099":                   {"2099-12-31T23:59:59Z", opts.Now, true},
		"an hour ahead":             {"2026-11-02T01:00:00Z", opts.Now, true},
		"a minute ahead (clock)":    {"2026-11-02T00:01:00Z", opts.Now, false},
		"a day before the upload":   {"2026-11-01T00:00:00Z", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), false},
		"ahead in another timezone": {"2026-11-02T02:00:00+01:00", opts.Now, true},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := ingest.Parse(at(tc.timestamp), opts)
			if err != nil {
				t.Fatal(err)
			}
			if !r.ScannedAt.Equal(tc.want) {
				t.Errorf("scannedAt = %v, want %v", r.ScannedAt, tc.want)
			}
			if warned := len(r.Warnings) == 1 && strings.Contains(r.Warnings[0], "ahead of the upload time"); warned != tc.warned || (!tc.warned && len(r.Warnings) > 0) {
				t.Errorf("warnings = %q, want a clamp warning: %v", r.Warnings, tc.warned)
			}
		})
	}
}

// zst compresses data as the uploader does: one zstd frame (SpeedFastest,
// a 1 MiB window), its content size declared.
func zst(t *testing.T, data []byte, o ...zstd.EOption) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, append([]zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1 << 20)}, o...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}

// A zstd upload declares its decompressed size in its frame header:
// ReadWire reports it before anything is decompressed and refuses one over
// the limit or one it cannot hold to a size (no content size, a skippable
// frame first); Decode never produces more than declared, so a header that
// lies fails, as do a second frame with content, a wrong checksum and cut
// data. Frame hands out the body only when it is exactly one frame.
func TestReadWireZstd(t *testing.T) {
	bom := bytes.Repeat(constructedBOM(), 700) // ~2.7 MB: a windowed frame
	z := zst(t, bom)
	w, err := ingest.ReadWire(bytes.NewReader(z), "zstd", int64(len(z)), 8<<20)
	if err != nil || w.Size() != int64(len(bom)) || w.Len() != int64(len(z)) {
		t.Fatalf("ReadWire: %v, size %d, len %d; want size %d, len %d", err, w.Size(), w.Len(), len(bom), len(z))
	}
	if got, err := w.Decode(); err != nil || !bytes.Equal(got, bom) {
		t.Fatalf("Decode: equal %v, %v", bytes.Equal(got, bom), err)
	}
	if frame, window := w.Frame(); !bytes.Equal(frame, z) || window != 1<<20 {
		t.Errorf("Frame: %d bytes, window %d; want the %d-byte body, window 1 MiB", len(frame), window, len(z))
	}
	small := constructedBOM()
	if w, err := ingest.ReadWire(bytes.NewReader(zst(t, small)), "zstd", -1, 8<<20); err != nil {
		t.Fatal(err)
	} else if _, window := w.Frame(); window != int64(len(small)) {
		t.Errorf("a one-segment frame's window is its content, %d bytes: got %d", len(small), window)
	}
	if _, err := ingest.ReadWire(bytes.NewReader(z), "zstd", -1, int64(len(bom)-1)); !errors.Is(err, ingest.ErrTooLarge) {
		t.Errorf("declared size over the limit: %v", err)
	}

	// Streamed without its size: the frame declares none.
	var streamed bytes.Buffer
	sw, _ := zstd.NewWriter(&streamed)
	_, _ = sw.Write(bom)
	_ = sw.Close()
	skippable := append([]byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}, z...)
	for name, body := range map[string][]byte{
		"no content size": streamed.Bytes(),
		"skippable first": skippable,
		"not zstd":        gz(bom),
		"two frames":      append(zst(t, bom[:len(bom)/2]), zst(t, bom[len(bom)/2:])...),
		"declares less":   withFCS(t, z, uint32(len(bom)-10)),
		"declares more":   withFCS(t, z, uint32(len(bom)+10)),
		"checksum wrong":  append(append([]byte{}, z[:len(z)-4]...), ^z[len(z)-4], z[len(z)-3], z[len(z)-2], z[len(z)-1]),
		"data cut":        z[:len(z)/2],
		"header only":     z[:6],
	} {
		w, err := ingest.ReadWire(bytes.NewReader(body), "zstd", -1, 8<<20)
		if err == nil {
			_, err = w.Decode()
		}
		if !errors.Is(err, ingest.ErrBadZstd) {
			t.Errorf("%s: %v, want ErrBadZstd", name, err)
		}
		t.Logf("%s: %v", name, err)
	}

	// A frame followed by an empty one decodes to the BOM, but is not one
	// frame: the store compresses the BOM itself rather than keep it.
	empty := zst(t, nil)
	w, err = ingest.ReadWire(bytes.NewReader(append(append([]byte{}, z...), empty...)), "zstd", -1, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.Decode(); err != nil || !bytes.Equal(got, bom) {
		t.Fatalf("frame and an empty frame: equal %v, %v", bytes.Equal(got, bom), err)
	}
	if frame, _ := w.Frame(); frame != nil {
		t.Errorf("frame and an empty frame: Frame handed out %d bytes, want none", len(frame))
	}
}

// A zstd bomb: 64 MiB of spaces in a frame whose header declares 1,000
// bytes. Decode stops at the declared size, without holding the rest.
func TestZstdBombStopsAtTheDeclaredSize(t *testing.T) {
	z := withFCS(t, zst(t, bytes.Repeat([]byte(" "), 64<<20)), 1000)
	w, err := ingest.ReadWire(bytes.NewReader(z), "zstd", -1, 1<<20)
	if err != nil || w.Size() != 1000 {
		t.Fatalf("ReadWire: %v, size %d", err, w.Size())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if _, err := w.Decode(); !errors.Is(err, ingest.ErrBadZstd) {
		t.Fatalf("Decode: %v, want ErrBadZstd", err)
	}
	runtime.ReadMemStats(&after)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("zstd bomb took %v to reject", d)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("rejecting the bomb allocated %d MiB", grew>>20)
	}
}

// withFCS copies a zstd frame with the content size in its header
// replaced; the frame must declare it in 4 bytes (content of 65,792 bytes
// to 4 GiB) and have no dictionary id.
func withFCS(t *testing.T, z []byte, n uint32) []byte {
	t.Helper()
	fhd := z[4]
	if fhd>>6 != 2 || fhd&3 != 0 {
		t.Fatalf("frame header descriptor %08b: want a 4-byte content size and no dictionary", fhd)
	}
	at := 5
	if fhd&(1<<5) == 0 { // a window descriptor first
		at++
	}
	return withWord(z, at, n)
}

func withWord(z []byte, at int, v uint32) []byte {
	out := append([]byte{}, z...)
	binary.LittleEndian.PutUint32(out[at:], v)
	return out
}
