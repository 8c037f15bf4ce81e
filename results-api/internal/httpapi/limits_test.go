package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/httpapi"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// withConfig changes the service configuration apitest starts.
func withConfig(f func(c *service.Config)) apitest.Option { return apitest.Option(f) }

func withLimits(l httpapi.Limits) apitest.Option {
	return withConfig(func(c *service.Config) { c.Limits = l })
}

// rows counts, straight from Postgres, what the store holds: reports,
// findings and BOMs.
type rows struct{ reports, findings, boms int }

func countRows(t *testing.T, dsn string) rows {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var r rows
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM reports), (SELECT count(*) FROM findings),
		(SELECT count(*) FROM report_boms)`).Scan(&r.reports, &r.findings, &r.boms)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// putAsync uploads bom for digest and returns the status, the error code
// (for a JSON error) and the Retry-After header.
func (c *client) putAsync(digest string, body io.Reader, size int64) (int, string, string) {
	req, err := http.NewRequest(http.MethodPut, c.srv.URL+"/api/v1/reports/"+digest, body)
	if err != nil {
		return 0, err.Error(), ""
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+c.srv.Token)
	req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		return 0, err.Error(), ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code := ""
	if resp.StatusCode >= 400 {
		code = errorCode(c.t, b)
	}
	return resp.StatusCode, code, resp.Header.Get("Retry-After")
}

// An upload the ingest budget cannot admit within the wait is refused
// with 503 and Retry-After (the uploader retries 5xx and treats every 4xx
// as final, so 429 would lose the report), before any of it is read or
// stored. Every upload ends stored whole or not at all: the rows in
// Postgres are exactly those of the 201s.
func TestIngestBudgetRefusesNeverHalfStores(t *testing.T) {
	bom := bomtest.Sized(3, 256<<10)
	findings := countFindings(t, bom)
	size := int64(len(bom))
	// Room for one upload of bom, not two.
	c := newClient(t, withLimits(httpapi.Limits{IngestMemory: httpapi.IngestCostFactor * size * 3 / 2, MemoryWait: 300 * time.Millisecond}))

	// One upload takes the budget and stalls half-way through its body.
	pr, pw := io.Pipe()
	held := make(chan int, 1)
	go func() {
		code, _, _ := c.putAsync(bomtest.Digest(100), pr, size)
		held <- code
	}()
	if _, err := pw.Write(bom[:size/2]); err != nil {
		t.Fatal(err)
	}
	// The client has sent half the body; the server admits the upload in
	// its own goroutine, so wait until the budget gauge shows the lease
	// before anyone else asks.
	waitForMetric(t, c, `crowsnest_results_api_memory_budget_in_use_bytes{budget="ingest"}`, float64(httpapi.IngestCostFactor*size))
	// Everyone else is refused while it holds the budget.
	const others = 7
	type result struct {
		code          int
		errCode, wait string
	}
	results := make([]result, others)
	var wg sync.WaitGroup
	for i := range others {
		wg.Go(func() {
			code, ec, ra := c.putAsync(bomtest.Digest(i), bytes.NewReader(bom), size)
			results[i] = result{code, ec, ra}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.code != http.StatusServiceUnavailable || r.errCode != "busy" || r.wait == "" {
			t.Errorf("upload %d while the budget is held: %d %s, Retry-After %q; want 503 busy with Retry-After", i, r.code, r.errCode, r.wait)
		}
	}
	if got := countRows(t, c.srv.DatabaseURL); got != (rows{}) {
		t.Fatalf("rows while only refusals and a stalled upload happened: %+v", got)
	}
	if _, err := pw.Write(bom[size/2:]); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if code := <-held; code != http.StatusCreated {
		t.Fatalf("the stalled upload, once complete: %d", code)
	}

	// A free-for-all: all at once, each either stored whole or refused.
	stored := 1
	var mu sync.Mutex
	for i := range others {
		wg.Go(func() {
			code, ec, _ := c.putAsync(bomtest.Digest(i), bytes.NewReader(bom), size)
			switch {
			case code == http.StatusCreated:
				mu.Lock()
				stored++
				mu.Unlock()
			case code != http.StatusServiceUnavailable || ec != "busy":
				t.Errorf("upload %d: %d %s, want 201 or 503 busy", i, code, ec)
			}
		})
	}
	wg.Wait()
	if stored < 2 {
		t.Errorf("only %d uploads stored", stored)
	}
	want := rows{reports: stored, findings: stored * findings, boms: stored}
	if got := countRows(t, c.srv.DatabaseURL); got != want {
		t.Fatalf("rows = %+v, want exactly %+v (%d stored reports of %d findings)", got, want, stored, findings)
	}
	if got := metricValue(t, c, `crowsnest_results_api_limit_refusals_total{limit="ingest_memory"}`); got < others {
		t.Errorf("ingest_memory refusals metric = %v, want ≥ %d", got, others)
	}
}

// A report with more findings than --max-findings is refused with 413
// too_many_findings and leaves no row behind; one at the cap is stored.
func TestFindingsCap(t *testing.T) {
	c := newClient(t, withLimits(httpapi.Limits{MaxFindings: 5}))
	over := bomtest.BOM(bomtest.Random(9, 6)...)
	code, b := c.put(bomtest.Digest(1), over)
	if code != http.StatusRequestEntityTooLarge || errorCode(t, b) != "too_many_findings" {
		t.Fatalf("6 findings with a cap of 5: %d %s", code, b)
	}
	if !strings.Contains(string(b), "more than 5") {
		t.Errorf("message does not name the cap: %s", b)
	}
	if got := countRows(t, c.srv.DatabaseURL); got != (rows{}) {
		t.Fatalf("rows after a refused report: %+v", got)
	}
	if code, b := c.put(bomtest.Digest(2), bomtest.BOM(bomtest.Random(9, 5)...)); code != http.StatusCreated {
		t.Fatalf("5 findings with a cap of 5: %d %s", code, b)
	}
	if got := countRows(t, c.srv.DatabaseURL); got != (rows{reports: 1, findings: 5, boms: 1}) {
		t.Fatalf("rows after one stored report: %+v", got)
	}
}

// A statement that outlives the statement timeout (here: a query waiting
// behind a lock another session holds) is answered 503 db_timeout with
// Retry-After, not 500; the same request succeeds once the lock is gone.
func TestStatementTimeoutIs503(t *testing.T) {
	c := newClient(t, withConfig(func(c *service.Config) { c.StatementTimeout = 300 * time.Millisecond }))
	c.srv.PutReport(t, bomtest.Digest(1), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.srv.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE reports IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, c.srv.URL+"/api/v1/reports", nil)
	resp, err := c.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || errorCode(t, b) != "db_timeout" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("list behind a lock: %d %s (Retry-After %q), want 503 db_timeout", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timed-out request took %v", d)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if code, b := c.do(http.MethodGet, "/api/v1/reports", nil); code != http.StatusOK {
		t.Fatalf("list after the lock is gone: %d %s", code, b)
	}
	if got := metricValue(t, c, `crowsnest_results_api_db_errors_total{op="count reports"}`) +
		metricValue(t, c, `crowsnest_results_api_db_errors_total{op="list reports"}`); got < 1 {
		t.Errorf("the timeout was not counted as a database error")
	}
}

// countFindings parses bom as the server would and returns its findings.
func countFindings(t *testing.T, bom []byte) int {
	t.Helper()
	var doc struct{ Vulnerabilities []struct{ Affects []any } }
	if err := jsonUnmarshal(bom, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range doc.Vulnerabilities {
		n += max(1, len(v.Affects))
	}
	return n
}

// metricValue reads one sample (name{labels} as exposed) from /metrics;
// 0 when absent.
func metricValue(t *testing.T, c *client, sample string) float64 {
	t.Helper()
	code, b := c.do(http.MethodGet, "/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return 0
}

// waitForMetric polls /metrics (bounded: 10 s) until sample is at least min.
func waitForMetric(t *testing.T, c *client, sample string, minimum float64) {
	t.Helper()
	var got float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = metricValue(t, c, sample); got >= minimum {
			return
		}
	}
	t.Fatalf("%s = %v after 10s, want ≥ %v", sample, got, minimum)
}
