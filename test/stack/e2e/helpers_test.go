package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
)

// jobWatch records every Job created in a namespace.
type jobWatch struct {
	mu      sync.Mutex
	digests map[string][]string  // digest annotation → Job names
	created map[string]time.Time // digest annotation → its first Job's creation (1 s resolution)
}

// watchJobs records every scan Job created in ns from now on, by digest:
// Job names, or namespace/name when ns is metav1.NamespaceAll.
func watchJobs(t *testing.T, ns string) *jobWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := shared.Cluster.Client.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jw := &jobWatch{digests: map[string][]string{}, created: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			job, ok := ev.Object.(*batchv1.Job)
			if !ok || ev.Type != watch.Added {
				continue
			}
			jw.mu.Lock()
			d, name := job.Annotations["crowsnest.dev/digest"], job.Name
			if ns == metav1.NamespaceAll {
				name = job.Namespace + "/" + name
			}
			jw.digests[d] = append(jw.digests[d], name)
			if _, ok := jw.created[d]; !ok {
				jw.created[d] = job.CreationTimestamp.Time
			}
			jw.mu.Unlock()
		}
	}()
	return jw
}

// createdAt is when the first Job of digest was created.
func (jw *jobWatch) createdAt(digest string) (time.Time, bool) {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	at, ok := jw.created[digest]
	return at, ok
}

func (jw *jobWatch) snapshot() map[string][]string {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	out := map[string][]string{}
	for k, v := range jw.digests {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// reportSummary is the part of results-api's ReportSummary the tests read.
type reportSummary struct {
	Digest    string          `json:"digest"`
	Image     string          `json:"image"`
	Counts    map[string]int  `json:"counts"`
	ScannedAt time.Time       `json:"scannedAt"`
	Findings  json.RawMessage `json:"findings"`
	Fixable   int             `json:"fixable"`
	// The Grype DB the report was matched against (empty: unknown).
	DBBuilt  string `json:"dbBuilt"`
	DBSchema string `json:"dbSchema"`
}

// getReport returns the report of digest, or an error when there is none.
func getReport(ctx context.Context, digest string) (*reportSummary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, shared.URL()+"/api/v1/reports/"+digest, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET report %s: %s", digest, resp.Status)
	}
	var r reportSummary
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// deleteReport deletes a report with the write token.
func deleteReport(ctx context.Context, digest string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, shared.URL()+"/api/v1/reports/"+digest, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+shared.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("DELETE report %s: %s", digest, resp.Status)
	}
	return nil
}

func image(t *testing.T, name string) registry.Image {
	t.Helper()
	img, ok := shared.Registry.Lookup(name)
	if !ok {
		t.Fatalf("no demo image %s", name)
	}
	return img
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
