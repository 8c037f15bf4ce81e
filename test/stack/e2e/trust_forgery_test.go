package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestForgedFutureEventIsDropped plays an attacker who stole the operator's
// NATS credentials (the bus permissions cannot stop that one): a job.done
// dated in the year 9999 would freeze a digest's scan status forever. It
// runs after TestScanLifecycle (file order), whose alpine scan it targets:
// results-api must drop the event (counted in crowsnest_events_invalid_total)
// and the scan status must stay as it was.
func TestForgedFutureEventIsDropped(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 2*time.Minute)
	alpine := image(t, "alpine")
	before := scanStatus(ctx, t, alpine.Digest)
	invalidBefore := metricValue(ctx, t, `crowsnest_events_invalid_total{reason="time",subject="crowsnest.job.done"}`)

	nc, err := nats.Connect(shared.NATS.URL(), nats.UserInfo(string(eventsv1.UserOperator), shared.NATS.Password(eventsv1.UserOperator)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeJobDone, eventsv1.ID(eventsv1.TypeJobDone, "forged-9999"), alpine.Digest,
		time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), eventsv1.JobDone{Digest: alpine.Digest, Image: alpine.Ref(),
			Namespace: before.Namespace, Job: "forged", Outcome: eventsv1.OutcomeFailed, Reason: "ImagePullFailed", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(ev)
	if _, err := js.Publish(ctx, eventsv1.SubjectJobDone, body, jetstream.WithMsgID(ev.ID)); err != nil {
		t.Fatalf("publish with the operator's credentials: %v", err)
	}
	eventually(t, 30*time.Second, "the forged event counted as invalid", func() error {
		if got := metricValue(ctx, t, `crowsnest_events_invalid_total{reason="time",subject="crowsnest.job.done"}`); got != invalidBefore+1 {
			return fmt.Errorf("invalid events %v, want %v", got, invalidBefore+1)
		}
		return nil
	})
	after := scanStatus(ctx, t, alpine.Digest)
	if after.Status != before.Status || after.Job != before.Job || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("scan status changed by a forged event: %+v, was %+v", after, before)
	}
}

// TestTenantScannerCannotStopScanning writes the Scanner that used to stop
// the operator for every namespace (rescanInterval: 1d, which the typed
// client cannot even express): the API server refuses it with a message
// that says why, and a new digest in another namespace is still scanned. It
// runs after TestScanLifecycle, whose e2e-scan Scanner does that scan.
func TestTenantScannerCannotStopScanning(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 3*time.Minute)
	ns := "e2e-tenant"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crowsnest.dev/v1alpha1", "kind": "Scanner",
		"metadata": map[string]any{"name": "one-day", "namespace": ns},
		"spec":     map[string]any{"rescanInterval": "1d"},
	}}
	err := shared.Client.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "rescanInterval must be 0s (off) or at least 1h") {
		t.Fatalf("a Scanner with rescanInterval 1d: %v, want a refusal that says why", err)
	}
	b, err := registry.Variant("after-tenant-scanner")
	if err != nil {
		t.Fatal(err)
	}
	img, err := shared.Registry.Push(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Pod("e2e-scan", "after-tenant-scanner", img.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a new digest scanned elsewhere", func() error {
		_, err := getReport(ctx, img.Digest)
		return err
	})
}

type scanRow struct {
	Namespace, Job, Status string
	UpdatedAt              time.Time
}

// scanStatus reads a digest's scan status from results-api.
func scanStatus(ctx context.Context, t *testing.T, digest string) scanRow {
	t.Helper()
	var page struct {
		Items []struct {
			Digest string
			scanRow
		}
	}
	getJSON(ctx, t, shared.URL()+"/api/v1/scans?limit=1000", &page)
	for _, it := range page.Items {
		if it.Digest == digest {
			return it.scanRow
		}
	}
	return scanRow{}
}

func getJSON(ctx context.Context, t *testing.T, url string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// metricValue sums sample over every results-api replica's /metrics (each
// counts what it handled itself; a replica without the sample adds 0).
func metricValue(ctx context.Context, t *testing.T, sample string) float64 {
	t.Helper()
	var sum float64
	for _, api := range shared.APIs {
		v, _, err := replicaMetric(ctx, api.URL(), sample)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// replicaMetric reads one sample from the /metrics of the replica at base;
// found is false when the sample is not there.
func replicaMetric(ctx context.Context, base, sample string) (v float64, found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, sample+" "); ok {
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v, true, nil
			}
		}
	}
	return 0, false, nil
}
