package bench

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"
)

// smoke is set by CROWSNEST_BENCH_SMOKE: CI then runs every benchmark once
// (-benchtime 1x) on small data sets, to prove that each still runs and
// that its correctness checks pass. Its numbers mean nothing; unset, the
// benchmarks use the full sizes that docs/benchmarks.md records.
var smoke = os.Getenv("CROWSNEST_BENCH_SMOKE") != ""

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmarks selected: no Postgres needed
	}
	if err := raiseFileLimit(4096); err != nil {
		fmt.Fprintln(os.Stderr, "bench: raise open-file limit:", err)
	}
	os.Exit(pgtest.Main(m))
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE to at least want (bounded by
// the hard limit): 1,000 WebSocket clients and their server ends need
// 2,000+ descriptors in this one process.
func raiseFileLimit(want uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= want {
		return nil
	}
	l.Cur = min(want, l.Max)
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}

// p99 returns the 99th percentile (nearest rank) of d.
func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(math.Ceil(0.99*float64(len(s))))-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// zstdFrame compresses b as the uploader does: one frame, SpeedFastest, a
// 1 MiB window.
func zstdFrame(b []byte) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func httpClient(conns int) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: conns, DisableCompression: true}}
}

// do sends one request and returns its body; an error unless the status
// is want. (It returns the error so that writer goroutines can use it.)
func do(c *http.Client, req *http.Request, want int) ([]byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return body, nil
}
