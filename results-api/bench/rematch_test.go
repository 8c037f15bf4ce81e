package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/natstest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
)

// BenchmarkRematchIngest replaces stored reports through the real HTTP
// handler, gzip-compressed, with 4 writers, as the matcher does after a DB
// update: "changed" alternates each digest between a ~0.5 MB report and
// the same report without its last ~10% of findings (each PUT computes the
// change, rewrites the findings and records the change with its
// findings.changed event); "unchanged" alternates between two encodings
// of the same report (each PUT stores the new BOM and summary and keeps
// the findings rows). The report is the Grype large fixture cut to
// 0.5 MB when it exists, a constructed one otherwise. Each writer owns 8
// digests, so no two writers wait on one report's row lock.
func BenchmarkRematchIngest(b *testing.B) {
	full, part, name := bomtest.BOM(bomtest.Random(3, 900)...), bomtest.BOM(bomtest.Random(3, 810)...), "constructed-0.5MB"
	if raw, err := os.ReadFile(largeFixture); err == nil {
		full, part, name = cutBOM(b, raw, 512<<10), cutBOM(b, raw, 460<<10), "grype-0.5MB"
	}
	// With NATS, as deployed: each change writes its events into the
	// outbox in the report's transaction and the relay publishes them.
	_, url := natstest.StartT(b)
	srv := apitest.Start(b, apitest.WithNATS(url))
	var seq atomic.Int64
	const writers = 4
	for _, mode := range []struct {
		name   string
		bodies [2][]byte
	}{
		{"changed", [2][]byte{gzipped(full), gzipped(part)}},
		{"unchanged", [2][]byte{gzipped(full), gzipped(append(bytes.Clone(full), '\n'))}},
	} {
		b.Run(fmt.Sprintf("%s/%s/writers=%d", mode.name, name, writers), func(b *testing.B) {
			b.SetBytes(int64(len(full)))
			rematch(b, srv, mode.bodies, writers, &seq)
			b.ReportMetric(float64(countVulns(b, full)), "findings/report")
		})
	}
}

// rematch seeds 8 digests per writer with bodies[0], then has each writer
// PUT its digests in turn, each time the other body than it holds.
func rematch(b *testing.B, srv *apitest.Server, bodies [2][]byte, writers int, seq *atomic.Int64) {
	const perWriter = 8
	c := httpClient(writers)
	putBody := func(d string, body []byte, want int) error {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+d+"?image=registry.example/bench@"+d, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Token)
		req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
		req.Header.Set("Content-Encoding", "gzip")
		_, err := do(c, req, want)
		return err
	}
	digests := make([][]string, writers)
	for w := range digests {
		for range perWriter {
			d := bomtest.Digest(2_000_000 + int(seq.Add(1)))
			if err := putBody(d, bodies[0], http.StatusCreated); err != nil {
				b.Fatal(err)
			}
			digests[w] = append(digests[w], d)
		}
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for k := 0; ; k++ {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				// Round k over the writer's digests puts body (k+1)%2 on
				// each: always the one it does not hold.
				d, body := digests[w][k%perWriter], bodies[(k/perWriter+1)%2]
				t0 := time.Now()
				if err := putBody(d, body, http.StatusOK); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reports/s")
	b.ReportMetric(ms(p99(lat)), "p99-ms")
}
