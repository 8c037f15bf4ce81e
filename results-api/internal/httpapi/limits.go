package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/metrics"
)

// Limits bound what one replica holds for its clients: time per request
// and memory for the requests whose memory grows with the data. Zero
// fields get the defaults below.
type Limits struct {
	// RequestTimeout is the read and write deadline of ordinary requests
	// (default 30 s). A read deadline that passes also cancels the
	// request's context, so it bounds the handler's database work too.
	RequestTimeout time.Duration
	// UploadTimeout replaces it for PUT report: body, parse and store
	// (default 2 min).
	UploadTimeout time.Duration
	// DownloadTimeout replaces it for the BOM download (default 5 min).
	// The WebSocket route has no deadline once upgraded: the hub times
	// each write and ping itself.
	DownloadTimeout time.Duration
	// IngestMemory is the memory uploads may hold together while they
	// are read, parsed and stored (default DefaultIngestMemory). An
	// upload is charged its compressed bytes plus IngestCostFactor times
	// its BOM size (the Content-Length, or what the gzip trailer
	// declares); one larger than the whole budget runs alone.
	IngestMemory int64
	// ReadMemory is the memory BOM downloads and report details may hold
	// together (default DefaultReadMemory): a download is charged its
	// compressed bytes plus the decoder's window, a report detail
	// DetailCostPerFinding per finding.
	ReadMemory int64
	// MemoryWait is how long a request waits for its share of a budget
	// before it is refused with 503 and Retry-After (default 5 s).
	MemoryWait time.Duration
	// MaxFindings refuses reports with more findings with 413
	// too_many_findings (default ingest.DefaultMaxFindings).
	MaxFindings int
}

// Defaults of Limits, sized for the chart's 512 MiB memory limit: the
// ingest budget covers one upload of the chart's largest BOM (64 MiB
// decompressed) at a time, or many small ones, and leaves room for the
// read budget, 1,000 WebSocket clients and the process itself
// (docs/benchmarks.md, "results-api under memory pressure").
const (
	DefaultRequestTimeout  = 30 * time.Second
	DefaultUploadTimeout   = 2 * time.Minute
	DefaultDownloadTimeout = 5 * time.Minute
	DefaultIngestMemory    = 192 << 20
	DefaultReadMemory      = 64 << 20
	DefaultMemoryWait      = 5 * time.Second
)

// IngestCostFactor is the memory an upload holds per byte of BOM at its
// peak: the BOM itself, its decoded CycloneDX document, the findings and
// the garbage of decoding them. Measured for a Grype-shaped 32 MiB BOM
// (30,000 findings; gzip upload, decode, parse, zstd): 3.4 bytes per
// byte of heap in use at the peak, 1.6 live once parsed.
const IngestCostFactor = 4

// DetailCostPerFinding is the memory GET report holds per finding: the
// row, the domain and API values and the JSON encoding.
const DetailCostPerFinding = 2 << 10

func (l *Limits) defaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.RequestTimeout, DefaultRequestTimeout)
	def(&l.UploadTimeout, DefaultUploadTimeout)
	def(&l.DownloadTimeout, DefaultDownloadTimeout)
	def(&l.MemoryWait, DefaultMemoryWait)
	if l.IngestMemory <= 0 {
		l.IngestMemory = DefaultIngestMemory
	}
	if l.ReadMemory <= 0 {
		l.ReadMemory = DefaultReadMemory
	}
}

// deadline sets the connection's read and write deadlines to d from now
// (zero d: none), replacing the server-wide ones for this request.
func deadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var t time.Time
			if d > 0 {
				t = time.Now().Add(d)
			}
			rc := http.NewResponseController(w)
			// ErrNotSupported only where there is no connection (tests
			// with a ResponseRecorder).
			_ = rc.SetReadDeadline(t)
			_ = rc.SetWriteDeadline(t)
			next.ServeHTTP(w, r)
		})
	}
}

// budget is a byte-weighted semaphore: a request takes its weight before
// it allocates and returns it when done, and waits at most wait for it.
type budget struct {
	name    string // metric label: ingest or read
	sem     *semaphore.Weighted
	size    int64
	wait    time.Duration
	metrics *metrics.Metrics
}

func newBudget(name string, size int64, wait time.Duration, m *metrics.Metrics) *budget {
	return &budget{name: name, sem: semaphore.NewWeighted(size), size: size, wait: wait, metrics: m}
}

// errBusy answers a request the budget could not admit in time.
func errBusy(what string, retry time.Duration) *apiError {
	e := newError(http.StatusServiceUnavailable, "busy", "the server is at its memory limit for "+what+"; retry later")
	e.retryAfter, e.refusal = retry, true
	return e
}

// lease is the part of a budget one request holds.
type lease struct {
	b *budget
	n int64
}

// take waits up to b.wait for n bytes (capped at the whole budget, so
// one oversized request runs alone instead of never).
func (b *budget) take(ctx context.Context, n int64) (*lease, error) {
	l := &lease{b: b}
	return l, l.resize(ctx, n)
}

// resize grows the lease to n bytes (waiting as take does) or shrinks it.
// A lease that cannot grow keeps what it had; release it.
func (l *lease) resize(ctx context.Context, n int64) error {
	n = min(max(n, 1), l.b.size)
	switch {
	case n < l.n:
		l.b.sem.Release(l.n - n)
	case n > l.n:
		wctx, cancel := context.WithTimeout(ctx, l.b.wait)
		defer cancel()
		if err := l.b.sem.Acquire(wctx, n-l.n); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			l.b.metrics.LimitRefusals.WithLabelValues(l.b.name + "_memory").Inc()
			return errBusy(l.b.name, l.b.wait)
		}
	}
	l.b.metrics.MemoryBudgetInUse.WithLabelValues(l.b.name).Add(float64(n - l.n))
	l.n = n
	return nil
}

func (l *lease) release() {
	if l.n > 0 {
		l.b.sem.Release(l.n)
		l.b.metrics.MemoryBudgetInUse.WithLabelValues(l.b.name).Sub(float64(l.n))
		l.n = 0
	}
}

// retryAfterSeconds renders a Retry-After value: whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}
