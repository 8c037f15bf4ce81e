package rematch

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/matcher/dbwrite/advisory"
)

// benchSize is the benchmark's DB size in affected-package rows and how
// many packages each SBOM holds: full size by default, small when
// CROWSNEST_BENCH_SMOKE is set (CI runs it to keep it compiling and working).
func benchSize() (rows, packages int) {
	if os.Getenv("CROWSNEST_BENCH_SMOKE") != "" {
		return 3_000, 40
	}
	return 300_000, 120
}

// The synthetic DB has the shape of Grype's published one, scaled: every
// row is in a distro namespace (several releases of Alpine and Debian) or a
// language ecosystem (npm, Go modules), and each name has about
// benchRowsPerName rows there; one row in benchAffectedEvery affects the
// installed version. It has no NVD CPE rows (dbwrite writes package rows
// only), so Grype's CPE searches find nothing, quickly, through the index.
// Every record is SYNTHETIC: ids CVE-2099-*, provider crowsnest-synthetic.
const (
	benchRowsPerAdvisory = 10
	benchRowsPerName     = 15
	benchAffectedEvery   = 15
)

var (
	benchAlpine = []*advisory.OS{
		{Name: "alpine", Major: "3", Minor: "16"}, {Name: "alpine", Major: "3", Minor: "17"},
		advisory.Alpine318, {Name: "alpine", Major: "3", Minor: "19"}, {Name: "alpine", Major: "3", Minor: "20"},
	}
	benchDebian = []*advisory.OS{{Name: "debian", Major: "11", Codename: "bullseye"}, advisory.Bookworm12}
)

// benchSlot spreads rows over namespaces: 45% Alpine, 35% Debian, 10% npm,
// 10% Go modules.
func benchSlot(row int) (os *advisory.OS, ecosystem string, namespaces int) {
	switch s := row % 20; {
	case s < 9:
		return benchAlpine[(row/20)%len(benchAlpine)], advisory.EcosystemApk, len(benchAlpine)
	case s < 16:
		return benchDebian[(row/20)%len(benchDebian)], advisory.EcosystemDeb, len(benchDebian)
	case s < 18:
		return nil, advisory.EcosystemNpm, 1
	default:
		return nil, advisory.EcosystemGo, 1
	}
}

// benchShare is the fraction of rows benchSlot puts in one ecosystem.
var benchShare = map[string]float64{
	advisory.EcosystemApk: 0.45, advisory.EcosystemDeb: 0.35, advisory.EcosystemNpm: 0.10, advisory.EcosystemGo: 0.10,
}

// benchNames is how many names one namespace of ecosystem holds rows for.
func benchNames(rows int, ecosystem string, namespaces int) int {
	return max(int(float64(rows)*benchShare[ecosystem])/namespaces/benchRowsPerName, 1)
}

// benchName names package i of an ecosystem. Alpine names mix no, one and
// two hyphens as a real Alpine image does (busybox, apk-tools,
// ca-certificates-bundle), which sets how many CPEs Syft gives them.
func benchName(ecosystem string, i int) string {
	switch ecosystem {
	case advisory.EcosystemApk:
		switch s := i % 20; {
		case s < 9:
			return fmt.Sprintf("cnpkg%05d", i)
		case s < 17:
			return fmt.Sprintf("cn-pkg%05d", i)
		default:
			return fmt.Sprintf("cn-pkg-%05d", i)
		}
	case advisory.EcosystemNpm:
		return fmt.Sprintf("cn-npm%05d", i)
	case advisory.EcosystemGo:
		return fmt.Sprintf("example.invalid/cn/mod%05d", i)
	default:
		return fmt.Sprintf("cndeb%05d", i)
	}
}

// benchAdvisories makes rows SYNTHETIC affected-package rows (see above).
func benchAdvisories(rows int) []advisory.Advisory {
	advs := make([]advisory.Advisory, 0, rows/benchRowsPerAdvisory+1)
	for row := 0; row < rows; {
		id := fmt.Sprintf("CVE-2099-%07d", len(advs)+1)
		a := advisory.Advisory{
			ID: id, Provider: advisory.ProviderSynthetic, Severity: []string{"critical", "high", "medium", "low"}[len(advs)%4],
			Description: "Synthetic benchmark advisory. Not a real vulnerability.",
			URL:         "https://example.invalid/crowsnest/synthetic/" + id,
		}
		for range benchRowsPerAdvisory {
			osr, eco, ns := benchSlot(row)
			names := benchNames(rows, eco, ns)
			affected := row%benchAffectedEvery == 0
			fixed := map[string][2]string{ // [not affected, affected]
				advisory.EcosystemApk: {"0.0.1-r0", "1.0.1-r0"}, advisory.EcosystemDeb: {"0.0.1-1", "1.0.1-1"},
				advisory.EcosystemNpm: {"0.0.1", "2.0.0"}, advisory.EcosystemGo: {"0.0.1", "2.0.0"},
			}[eco][map[bool]int{false: 0, true: 1}[affected]]
			constraint := "< " + fixed
			if eco == advisory.EcosystemGo {
				fixed = "v" + fixed
				constraint = "< " + fixed
			}
			a.Affected = append(a.Affected, advisory.Affected{OS: osr, Ecosystem: eco,
				Name: benchName(eco, (row/20/ns*7919)%names), Constraint: constraint, Fixed: fixed})
			row++
		}
		advs = append(advs, a)
	}
	return advs
}

// benchCPEs are the CPEs Syft gives an apk package (as in the fixtures):
// vendors are the name and its hyphen prefixes, products the name and its
// prefixes of two parts or more, each with - and _ spellings.
func benchCPEs(name, version string) []string {
	parts := strings.Split(name, "-")
	spell := func(k int) []string {
		s := strings.Join(parts[:k], "-")
		if k == 1 {
			return []string{s}
		}
		return []string{s, strings.Join(parts[:k], "_")}
	}
	var vendors, products []string
	for k := len(parts); k >= 1; k-- {
		vendors = append(vendors, spell(k)...)
		if k >= 2 || len(parts) == 1 {
			products = append(products, spell(k)...)
		}
	}
	var out []string
	for _, v := range vendors {
		for _, p := range products {
			out = append(out, fmt.Sprintf("cpe:2.3:a:%s:%s:%s:*:*:*:*:*:*:*", v, p, version))
		}
	}
	return out
}

type benchPkg struct {
	eco, name, version, origin string
}

func (p benchPkg) component(report int) map[string]any {
	prop := func(n, v string) map[string]any { return map[string]any{"name": n, "value": v} }
	ref := fmt.Sprintf("%s-%s-%d", p.name, p.version, report)
	if p.eco == advisory.EcosystemNpm {
		return map[string]any{
			"bom-ref": "pkg:npm/" + ref, "type": "library", "name": p.name, "version": p.version,
			"cpe":  fmt.Sprintf("cpe:2.3:a:%s:%s:%s:*:*:*:*:*:*:*", p.name, p.name, p.version),
			"purl": fmt.Sprintf("pkg:npm/%s@%s", p.name, p.version),
			"properties": []any{
				prop("syft:package:foundBy", "javascript-package-cataloger"), prop("syft:package:language", "javascript"),
				prop("syft:package:type", "npm"), prop("syft:package:metadataType", "javascript-npm-package"),
				prop("syft:location:0:path", "/app/node_modules/"+p.name+"/package.json"),
			},
		}
	}
	cpes := benchCPEs(p.name, p.version)
	props := []any{
		prop("syft:package:foundBy", "apk-db-cataloger"), prop("syft:package:type", "apk"),
		prop("syft:package:metadataType", "apk-db-entry"),
	}
	for _, c := range cpes[1:] {
		props = append(props, prop("syft:cpe23", c))
	}
	props = append(props, prop("syft:location:0:path", "/lib/apk/db/installed"), prop("syft:metadata:originPackage", p.origin))
	return map[string]any{
		"bom-ref": "pkg:apk/alpine/" + ref, "type": "library", "name": p.name, "version": p.version,
		"cpe": cpes[0], "purl": fmt.Sprintf("pkg:apk/alpine/%s@%s?arch=x86_64&distro=alpine-3.18.4", p.name, p.version),
		"properties": props,
	}
}

// fleetSBOM is report r of a fleet of Alpine 3.18 images with n packages
// each (three in four apk, the rest npm), of which the fraction shared is a
// common base (same names and versions in every report) and the rest the
// report's own (its own versions). A third of the apk packages come from
// another origin package (libcrypto3 from openssl), as in real images.
func fleetSBOM(t testing.TB, r, n int, shared float64) []byte {
	t.Helper()
	return fleetSBOMAt(t, r, n, shared, "1.0.0-r0")
}

// fleetSBOMAt is fleetSBOM with the common base at baseVersion (apk
// spelling; npm packages drop "-r0" and spell "-rN" as "-N"): reports that
// share the base's names at other versions, as images built on different
// releases of one base image do.
func fleetSBOMAt(t testing.TB, r, n int, shared float64, baseVersion string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(benchSkeleton(t), &doc); err != nil {
		t.Fatal(err)
	}
	comps := doc["components"].([]any)
	base := int(float64(n) * shared)
	for i := range n {
		eco := advisory.EcosystemApk
		if i%4 == 3 {
			eco = advisory.EcosystemNpm
		}
		idx, version := i, baseVersion
		if i >= base {
			idx = base + (r*(n-base)+i-base)%4096
			version = fmt.Sprintf("1.0.0-r%d", r+1)
		}
		p := benchPkg{eco: eco, name: benchName(eco, idx), version: version}
		if eco == advisory.EcosystemNpm {
			p.version = strings.Replace(strings.TrimSuffix(version, "-r0"), "-r", "-", 1)
		}
		p.origin = p.name
		if idx%3 == 1 {
			p.origin = benchName(eco, idx-1)
		}
		comps = append(comps, p.component(r))
	}
	doc["components"] = comps
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var skeleton struct {
	once sync.Once
	data []byte
	err  error
}

// benchSkeleton is the large fixture (real Grype output for Alpine 3.18)
// with its operating-system component only and no findings.
func benchSkeleton(t testing.TB) []byte {
	t.Helper()
	raw := fixtureBOM(t, "large")
	skeleton.once.Do(func() {
		var doc map[string]any
		if skeleton.err = json.Unmarshal(raw, &doc); skeleton.err != nil {
			return
		}
		var comps []any
		for _, c := range doc["components"].([]any) {
			if c.(map[string]any)["type"] == "operating-system" {
				comps = append(comps, c)
			}
		}
		doc["components"] = comps
		delete(doc, "vulnerabilities")
		skeleton.data, skeleton.err = json.Marshal(doc)
	})
	if skeleton.err != nil {
		t.Fatal(skeleton.err)
	}
	return skeleton.data
}

// benchDB writes the benchmark DB, or reuses the one in
// $CROWSNEST_BENCH_DB/<rows> (writing 300,000 rows takes minutes).
func benchDB(b *testing.B, rows int) string {
	b.Helper()
	root := os.Getenv("CROWSNEST_BENCH_DB")
	if root == "" {
		return writeDB(b, benchAdvisories(rows), db2Built)
	}
	dir := filepath.Join(root, strconv.Itoa(rows))
	if _, err := os.Stat(filepath.Join(dir, "vulnerability.db")); err == nil {
		return dir
	}
	src := writeDB(b, benchAdvisories(rows), db2Built)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(filepath.Join(src, "vulnerability.db"), filepath.Join(dir, "vulnerability.db")); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkRematch matches stored-report-sized SBOMs against a DB of
// benchSize rows with the Matcher's default concurrency (2), every
// iteration a different report: "distinct" reports share no package,
// "fleet" reports share 80% of theirs with a common base, as images built
// on one base image do; each with the match cache and the DB memo on and
// off. A distinct report's names are not in any other of the first 34 (4,096
// names of 120 per report); later ones reuse them at other versions. It
// reports throughput, the SQL statements Grype's store ran per report and
// the process's peak RSS (VmHWM, reset after the DB is written; run one
// sub-benchmark per process to read it per configuration).
func BenchmarkRematch(b *testing.B) {
	rows, pkgs := benchSize()
	start := time.Now()
	dir := benchDB(b, rows)
	b.Logf("DB of %d affected-package rows ready in %s", rows, time.Since(start).Round(time.Millisecond))
	for _, v := range []struct {
		name   string
		shared float64
	}{{"distinct", 0}, {"fleet", 0.8}} {
		for _, cache := range []int64{-1, 0} {
			for _, memo := range []int64{-1, 0} {
				name := v.name + "/cache=" + onOff(cache) + "/memo=" + onOff(memo)
				b.Run(name, func(b *testing.B) {
					benchRematch(b, dir, pkgs, v.shared, Options{CacheBytes: cache, MemoBytes: memo})
				})
			}
		}
	}
}

func onOff(bytes int64) string {
	if bytes < 0 {
		return "off"
	}
	return "on"
}

func benchRematch(b *testing.B, dir string, pkgs int, shared float64, o Options) {
	m, err := Open(dir, o)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	// The reports wait gzip-compressed and each is inflated when its turn
	// comes: a pass holds the few it is matching (it GETs each BOM), and
	// 1,000 inflated ~100 KB reports held for the whole run would be
	// ~100 MB of live heap the collector marks under the memory limit.
	boms := storedReports(b, dir, pkgs, shared)
	resetHWM()

	var next, findings atomic.Int64
	b.SetParallelism(1) // GOMAXPROCS goroutines; the Matcher admits 2 at a time
	statements, blobRows, decodes := work.sqlStatements.Load(), work.blobRows.Load(), work.blobDecodes.Load()
	b.ResetTimer()
	t0 := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			bom, err := gunzipped(boms[i])
			if err != nil {
				b.Error(err)
				return
			}
			_, f, err := m.Match(context.Background(), bom)
			if err != nil {
				b.Error(err)
				return
			}
			findings.Add(int64(len(f)))
		}
	})
	elapsed := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reports/s")
	b.ReportMetric(float64(findings.Load())/float64(b.N), "findings/report")
	b.ReportMetric(float64(work.sqlStatements.Load()-statements)/float64(b.N), "SQL/report")
	if hwm := vmHWM(b); hwm > 0 {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
	if st := m.CacheStats(); st.Hits+st.Misses > 0 {
		b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses), "cache-hit-ratio")
		b.ReportMetric(float64(st.Bytes)/(1<<20), "cache-MiB")
	}
	if st := m.MemoStats(); st.Hits+st.Misses > 0 {
		// vulnerability rows with a blob read by id, and the decodes of
		// their blobs, rowsByID's and Grype's (counted where the memo
		// answers the store's reads by id)
		b.ReportMetric(float64(work.blobRows.Load()-blobRows)/float64(b.N), "vuln-blob-rows/report")
		b.ReportMetric(float64(work.blobDecodes.Load()-decodes)/float64(b.N), "blob-decodes/report")
		b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses), "memo-hit-ratio")
		b.ReportMetric(float64(st.Bytes)/(1<<20), "memo-MiB")
	}
}

// storedReports are the b.N reports a pass GETs, gzip-compressed: what
// results-api stores for each fleet SBOM, Grype's output for it with its
// findings (60-70 % of a real report's bytes), matched once here against
// the same DB by a Matcher of their own (so the measured one starts cold).
// Until stop 55 the bench matched the bare SBOMs, which no pass sees.
func storedReports(b *testing.B, dir string, pkgs int, shared float64) [][]byte {
	src, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	// The SBOMs are built here (fleetSBOM may end the benchmark, which
	// only its own goroutine may); the workers match and compress.
	boms := make([][]byte, b.N)
	for i := range boms {
		boms[i] = gzipped(b, fleetSBOM(b, i, pkgs, shared))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				sbom, err := gunzipped(boms[i])
				if err != nil {
					b.Error(err)
					return
				}
				out, _, err := src.Match(context.Background(), sbom)
				if err == nil {
					boms[i], err = gzipBytes(out)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return boms
}

// gzipped is data gzip-compressed (fastest), gunzipped the reverse.
func gzipped(b *testing.B, data []byte) []byte {
	out, err := gzipBytes(data)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// gzipBytes is gzipped for any goroutine: it returns its error.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipped(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// resetHWM returns the memory freed since writing the DB to the OS and
// resets the process's peak RSS, so VmHWM measures matching (Linux; a
// no-op elsewhere).
func resetHWM() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o600)
}

// vmHWM is the process's peak resident set size in bytes (Linux).
func vmHWM(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	return 0
}

// BenchmarkMatchReport re-matches each real fixture as results-api stores
// it (Grype's report, findings included) against the fixtures' DB, memo on
// and match cache off (Grype's matchers run every time): the cost of a
// re-match by report size, and the bytes Syft's decoders read per stored
// byte (its format detection reads the document several times).
func BenchmarkMatchReport(b *testing.B) {
	m, err := Open(writeDB(b, advisory.All(0), fixtureBuilt), Options{CacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, f := range fixtures(b) {
		bom := fixtureBOM(b, f.Name)
		b.Run(f.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bom)))
			parsed0 := work.bomBytesParsed.Load()
			for b.Loop() {
				if _, _, err := m.Match(context.Background(), bom); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(work.bomBytesParsed.Load()-parsed0)/float64(b.N)/float64(len(bom)), "parsed-bytes/stored-byte")
		})
	}
}
