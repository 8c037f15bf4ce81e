package e2echart

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// deletePods deletes a results-api Pod and the matcher's Pod and, while
// they come back, runs a new image: the Deployment and the StatefulSet
// recover, every report is still there and the new one is stored once,
// its events reach a reader once each, and the matcher kept the newer DB
// on its volume (it downloads nothing from the mirror).
func deletePods(ctx context.Context, t *testing.T, c kubernetes.Interface, w *workloads) {
	api := "http://" + portForward(ctx, t, namespace, "svc/"+release+"-results-api:80")
	before, err := listDigests(ctx, api, w.reader)
	if err != nil {
		t.Fatal(err)
	}
	events := subscribe(ctx, t, c, eventsv1.SubjectReportStored, eventsv1.SubjectFindingsChanged)
	jobsBefore := w.jobs.count()
	downloads := cluster.DBMirrorDownloads()
	var victims []string
	for _, sel := range []string{"app.kubernetes.io/component=results-api", "app.kubernetes.io/component=matcher"} {
		pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			t.Fatalf("no Pod with %s", sel)
		}
		victims = append(victims, pods.Items[0].Name)
	}
	start := time.Now()
	for _, name := range victims {
		if err := c.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fresh := deployWorkload(ctx, t, c, scanned, "after-delete", mustImage(ctx, t, "recover"))
	if _, err := waitWorkloadsReady(ctx, c, namespace, 3*time.Minute); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logsOf(ctx, t, c, namespace))
	}
	t.Logf("deleted %v: every workload Ready again after %s", victims, time.Since(start).Round(time.Second))
	api = "http://" + portForward(ctx, t, namespace, "svc/"+release+"-results-api:80")
	if _, err := waitReport(ctx, api, w.reader, fresh, 4*time.Minute); err != nil {
		t.Fatalf("%v\n%s\n%s", err, describePods(ctx, c, scanned), logsOf(ctx, t, c, namespace))
	}
	if _, err := events.wait(ctx, eventsv1.TypeReportStored, fresh, time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // a duplicate would follow
	stored := events.about(eventsv1.TypeReportStored, fresh)
	changed := events.about(eventsv1.TypeFindingsChanged, fresh)
	if len(stored) != 1 || len(changed) != 1 {
		t.Errorf("events about the new report: %d report.stored, %d findings.changed, want one each", len(stored), len(changed))
	}
	after, err := listDigests(ctx, api, w.reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range before {
		if !slices.Contains(after, d) {
			t.Errorf("the report of %s is gone after the Pods' deletion", d)
		}
	}
	if len(after) != len(before)+1 {
		t.Errorf("%d reports before the deletion, %d after, want %d", len(before), len(after), len(before)+1)
	}
	// The matcher's restart checked the mirror (the newer DB it already
	// has) and fetched nothing: the DB is on its volume.
	if got := cluster.DBMirrorDownloads() - downloads; got != 0 {
		t.Errorf("the restarted matcher downloaded %d DB archives from the mirror, want 0 (its volume keeps the active DB)", got)
	}
	// One Job for the new image, and one more at most: a scan Pod that
	// started while the matcher was down cannot fetch the DB (GrypeFailed)
	// and its Job is retried after the operator's backoff.
	if created := w.jobs.since(jobsBefore); len(created) == 0 || len(created) > 2 {
		t.Errorf("scan Jobs created while the Pods recovered: %v, want the new image's (and one retry at most)", created)
	}
	t.Logf("recovered: %d reports before, %d after; events about the new one: %d report.stored, %d findings.changed; scan Jobs: %v",
		len(before), len(after), len(stored), len(changed), w.jobs.since(jobsBefore))
}

// decode reads a 200 JSON answer into out.
func decode(resp *http.Response, out any) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", resp.Request.URL.Path, resp.Status, firstLines(string(body), 2))
	}
	return json.Unmarshal(body, out)
}
