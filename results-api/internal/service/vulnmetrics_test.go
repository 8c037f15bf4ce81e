package service_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/vulnmetrics"
)

// A report stored or deleted through this replica's API refreshes the
// vulnerability metrics a debounce later, long before the interval.
func TestVulnMetricsFollowLocalReportChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := service.New(ctx, service.Config{DatabaseURL: pgtest.NewDatabase(t), WriteToken: adminToken,
		VulnMetrics: vulnmetrics.Options{Interval: time.Hour, Debounce: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler)
	defer func() { hs.Close(); svc.Close() }()
	srv := &apitest.Server{URL: hs.URL, Token: adminToken}
	waitMetric(t, hs.URL, `crowsnest_images{state="running"} 0`) // the refresh at start
	// Applied straight to the store: no trigger.
	if _, err := svc.Store.ApplyInventory(ctx, store.Inventory{Namespace: "x", EventID: "1", Time: time.Now(),
		Entries: []store.InventoryEntry{{Kind: "Pod", Name: "p", Container: "c", Digest: d1, Pods: 1}}}); err != nil {
		t.Fatal(err)
	}
	srv.PutReport(t, d1, nil)
	waitMetric(t, hs.URL, `crowsnest_images{state="running"} 1`)
	req, _ := http.NewRequest(http.MethodDelete, hs.URL+"/api/v1/reports/"+d1, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	waitMetric(t, hs.URL, `crowsnest_images{state="unscanned"} 1`)
}

// waitMetric waits up to 10 s for /metrics to hold line.
func waitMetric(t *testing.T, base, line string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if strings.Contains(scrape(t, base), "\n"+line+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in /metrics within 10s", line)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape is base's /metrics.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
