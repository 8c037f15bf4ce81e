package service_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// The service's retention loop deletes the report of an image that stopped
// running longer ago than --report-retention and keeps the one that runs.
func TestReportRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := service.New(ctx, service.Config{DatabaseURL: pgtest.NewDatabase(t), WriteToken: adminToken,
		ReportRetention: time.Hour, RetentionInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler)
	defer func() { hs.Close(); svc.Close() }()
	srv := &apitest.Server{URL: hs.URL, Token: adminToken}
	srv.PutReport(t, d1, nil)
	srv.PutReport(t, d2, nil)
	now := time.Now()
	for _, inv := range []store.Inventory{
		{Namespace: "x", EventID: "1", Time: now.Add(-3 * time.Hour), Entries: []store.InventoryEntry{{Kind: "Pod", Name: "p", Container: "c", Digest: d1, Pods: 1}}},
		{Namespace: "x", EventID: "2", Time: now.Add(-2 * time.Hour)},
		{Namespace: "y", EventID: "3", Time: now.Add(-3 * time.Hour), Entries: []store.InventoryEntry{{Kind: "Pod", Name: "p", Container: "c", Digest: d2, Pods: 1}}},
	} {
		if _, err := svc.Store.ApplyInventory(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := svc.Store.GetSummary(ctx, d1)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report of an image stopped 2 h ago is still there (%v) with a 1 h retention", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := svc.Store.GetSummary(ctx, d2); err != nil {
		t.Fatalf("the running image's report: %v", err)
	}
}
