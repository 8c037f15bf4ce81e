package rematch

import (
	"context"
	"testing"
	"time"

	"github.com/anchore/syft/syft/cpe"

	v6 "github.com/anchore/grype/grype/db/v6"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// BenchmarkMemoKey encodes the key of one package query, as the memo does
// for every lookup Grype's matchers make.
func BenchmarkMemoKey(b *testing.B) {
	c := cpe.Must("cpe:2.3:a:musl-libc:musl:1.2.4-r1:*:*:*:*:*:*:*", "").Attributes
	after := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	spec := &v6.PackageSpecifier{Name: "musl", Ecosystem: "apk", CPE: withoutVersion(&c)}
	opts := &v6.GetPackageOptions{
		OSs:             v6.OSSpecifiers{{Name: "alpine", MajorVersion: "3", MinorVersion: "18"}},
		Vulnerabilities: v6.VulnerabilitySpecifiers{{Name: "CVE-1", PublishedAfter: &after, Providers: []string{"nvd"}}},
		PreloadBlob:     true,
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := memoKey("GetAffectedPackages", spec, opts); !ok {
			b.Fatal("not encodable")
		}
	}
}

// BenchmarkMemoCopy copies every answer the memo holds after matching the
// fleet reports, as a hit does (out) and as a miss does when it keeps one
// (in, counting the bytes).
func BenchmarkMemoCopy(b *testing.B) {
	dir := writeDB(b, append(advisory.All(0), benchAdvisories(3000)...), fixtureBuilt)
	m, err := Open(dir, Options{CacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	for i := range 4 {
		if _, _, err := m.Match(context.Background(), fleetSBOM(b, i, 40, 0.8)); err != nil {
			b.Fatal(err)
		}
	}
	var values []any
	m.memo.memo.mu.Lock()
	for _, el := range m.memo.memo.entries {
		values = append(values, el.Value.(*lruEntry[memoID, any]).value)
	}
	m.memo.memo.mu.Unlock()
	if len(values) == 0 {
		b.Fatal("the memo holds nothing")
	}
	b.Run("out", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range values {
				_ = copyOut(v)
			}
		}
		b.ReportMetric(float64(len(values)), "answers")
	})
	b.Run("in", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range values {
				_, _ = deepCopy(v)
			}
		}
	})
}
