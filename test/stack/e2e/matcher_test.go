package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestMatcherServesScansAndRematches: scan Jobs fetch Grype's DB from the
// matcher (GRYPE_DB_UPDATE_URL in every Job, archives served), and a newer
// DB imported through the matcher's admin API re-matches every stored
// report exactly once: rematch.done counts all of them, none failed, none
// changed (the newer DB has the same advisories), and every report then
// records the new DB build.
func TestMatcherServesScansAndRematches(t *testing.T) {
	if shared.Matcher == nil {
		t.Fatal("the stack runs no matcher")
	}
	ctx := withTimeout(t, 4*time.Minute)
	// A workload on an image of its own: a fresh digest, so a scan Job of
	// its own fetches the DB.
	const ns = "e2e-matcher"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 2, 0)); err != nil {
		t.Fatal(err)
	}
	b, err := registry.Variant("matcher")
	if err != nil {
		t.Fatal(err)
	}
	img, err := shared.Registry.Push(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	servedBefore := matcherMetric(ctx, t, `crowsnest_vulndb_served_total{file="archive"}`)
	if err := shared.Client.Create(ctx, workload.Pod(ns, "app", img.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "a report of "+img.Digest, func() error {
		_, err := getReport(ctx, img.Digest)
		return err
	})

	jobs, err := shared.Cluster.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: scan.LabelManagedBy + "=" + scan.ManagedBy})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) == 0 {
		t.Fatalf("no scan Job in %s", ns)
	}
	for _, j := range jobs.Items {
		found := false
		for _, c := range j.Spec.Template.Spec.InitContainers {
			for _, e := range c.Env {
				if e.Name == "GRYPE_DB_UPDATE_URL" {
					found = true
					if e.Value != shared.Matcher.VulnDBURL() {
						t.Errorf("Job %s/%s: GRYPE_DB_UPDATE_URL=%s, want the matcher's %s", j.Namespace, j.Name, e.Value, shared.Matcher.VulnDBURL())
					}
				}
			}
		}
		if !found {
			t.Errorf("Job %s/%s has no GRYPE_DB_UPDATE_URL: its Grype would download the DB from the internet", j.Namespace, j.Name)
		}
	}
	if served := matcherMetric(ctx, t, `crowsnest_vulndb_served_total{file="archive"}`); served <= servedBefore {
		t.Errorf("the matcher served %v DB archives before the scan and %v after, want more (the scan fetches its DB there)", servedBefore, served)
	}

	done := subscribeRematchDone(t)
	before := listDigests(ctx, t)
	if len(before) == 0 {
		t.Fatal("no reports to re-match: the earlier scans stored none")
	}
	importedAt := time.Now()
	if err := shared.UpdateDB(ctx); err != nil {
		t.Fatal(err)
	}
	var got eventsv1.RematchDone
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("no rematch.done after the DB import")
	}
	if got.ReportsFailed != 0 || got.ReportsChanged != 0 || got.ReportsTotal != len(before) || got.ReportsUnchanged != len(before) {
		t.Errorf("rematch.done %+v, want all %d reports re-matched, unchanged, none failed", got, len(before))
	}
	built := got.DBBuilt.UTC().Format(time.RFC3339)
	for _, d := range before {
		var r struct {
			DBBuilt   string    `json:"dbBuilt"`
			MatchedAt time.Time `json:"matchedAt"`
			Cause     string    `json:"cause"`
		}
		getJSON(ctx, t, shared.URL()+"/api/v1/reports/"+d, &r)
		if r.DBBuilt != built || r.MatchedAt.Before(importedAt.Add(-time.Second)) {
			t.Errorf("report %s: dbBuilt %q matchedAt %s, want the new DB %s matched after %s", d, r.DBBuilt, r.MatchedAt, built, importedAt.Format(time.RFC3339))
		}
	}
}

// subscribeRematchDone delivers rematch.done payloads published from now on,
// read with the reader user like any other tool.
func subscribeRematchDone(t *testing.T) <-chan eventsv1.RematchDone {
	t.Helper()
	out := make(chan eventsv1.RematchDone, 4)
	consumeStream(t, shared.NATS.URL(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{eventsv1.SubjectRematchDone}, DeliverPolicy: jetstream.DeliverNewPolicy}, func(m jetstream.Msg) {
		p, _, ok := payload[eventsv1.RematchDone](t, m)
		if !ok {
			return
		}
		select {
		case out <- p:
		default:
		}
	})
	return out
}

// listDigests returns the digest of every stored report (all pages).
func listDigests(ctx context.Context, t *testing.T) []string {
	t.Helper()
	var out []string
	cursor := ""
	for range 100 {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Items      []struct{ Digest string } `json:"items"`
			NextCursor string                    `json:"nextCursor"`
		}
		getJSON(ctx, t, shared.URL()+"/api/v1/reports?"+q.Encode(), &page)
		for _, it := range page.Items {
			out = append(out, it.Digest)
		}
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
	t.Fatal("more than 100 pages of reports")
	return nil
}

// matcherMetric reads one sample of the matcher's /metrics.
func matcherMetric(ctx context.Context, t *testing.T, sample string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, shared.Matcher.URL()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("the matcher's metrics have no %s", sample)
	return 0
}
