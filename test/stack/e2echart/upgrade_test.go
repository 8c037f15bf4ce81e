package e2echart

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// scanned2 is the namespace the upgrade adds to global.scan.namespaces.
const scanned2 = "demo2"

// upgradeWithChangedValues runs helm upgrade with a second scanned
// namespace (a second Scanner) and a new rescan interval, which rolls the
// operator and results-api. Nothing stored is lost; no digest is scanned
// again: the Alpine image deployed in the new namespace already has its
// report, so only a new image there gets a Job (counted with a watch).
func upgradeWithChangedValues(ctx context.Context, t *testing.T, c kubernetes.Interface, w *workloads) {
	api := "http://" + portForward(ctx, t, namespace, "svc/"+release+"-results-api:80")
	before, err := listDigests(ctx, api, w.reader)
	if err != nil {
		t.Fatal(err)
	}
	jobsBefore := w.jobs.count()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scanned2}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := tool(ctx, t, "helm", "upgrade", release, filepath.Join(cluster.Options.Root, "helm", "crowsnest"), "-n", namespace, "--reuse-values",
		"--set", "global.scan.namespaces={"+scanned+","+scanned2+"}", "--set", "defaultScanner.spec.rescanInterval=12h"); err != nil {
		t.Fatal(err)
	}
	if _, err := waitWorkloadsReady(ctx, c, namespace, 3*time.Minute); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logsOf(ctx, t, c, namespace))
	}
	t.Logf("helm upgrade (second Scanner, rescanInterval 12h): every workload Ready after %s", time.Since(start).Round(time.Second))
	for _, ns := range []string{scanned, scanned2} {
		out, err := tool(ctx, t, "kubectl", "get", "scanner", "default", "-n", ns, "-o", "jsonpath={.spec.rescanInterval}")
		if err != nil || out != "12h0m0s" && out != "12h" {
			t.Errorf("Scanner %s/default: rescanInterval %q (%v), want 12h", ns, out, err)
		}
	}
	// The same Alpine image in the new namespace (scanned already) and a
	// new image there (scanned once).
	alpine := deployWorkload(ctx, t, c, scanned2, "app", mustImage(ctx, t, "findings"))
	if alpine != w.alpine {
		t.Fatalf("the same image runs as %s in %s and %s in %s", w.alpine, scanned, alpine, scanned2)
	}
	fresh := deployWorkload(ctx, t, c, scanned2, "fresh", mustImage(ctx, t, "upgrade"))
	api = "http://" + portForward(ctx, t, namespace, "svc/"+release+"-results-api:80")
	if _, err := waitReport(ctx, api, w.reader, fresh, 4*time.Minute); err != nil {
		t.Fatalf("%v\n%s\n%s", err, describePods(ctx, c, scanned2), logsOf(ctx, t, c, namespace))
	}
	// Let a needless scan of the Alpine digest show up, if one comes.
	time.Sleep(15 * time.Second)
	after, err := listDigests(ctx, api, w.reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range before {
		if !slices.Contains(after, d) {
			t.Errorf("the report of %s is gone after the upgrade", d)
		}
	}
	if len(after) != len(before)+1 {
		t.Errorf("%d reports before the upgrade, %d after, want %d (the new image's)", len(before), len(after), len(before)+1)
	}
	created := w.jobs.since(jobsBefore)
	if len(created) != 1 {
		t.Errorf("scan Jobs created during the upgrade step: %v, want exactly one (the new image's)", created)
	}
	t.Logf("upgrade: %d reports before, %d after; scan Jobs created: %v", len(before), len(after), created)
}

// mustImage pushes the runnable Alpine variant and returns its reference.
func mustImage(ctx context.Context, t *testing.T, variant string) string {
	t.Helper()
	img, err := cluster.PushRunnableAlpine(ctx, variant)
	if err != nil {
		t.Fatal(err)
	}
	return img.Ref()
}

// listDigests returns the digest of every stored report (all pages), read
// with token.
func listDigests(ctx context.Context, api, token string) ([]string, error) {
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
		if err := getJSON(ctx, api+"/api/v1/reports?"+q.Encode(), token, &page); err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out = append(out, it.Digest)
		}
		if cursor = page.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("more than 100 pages of reports")
}

// getJSON GETs url with a bearer token and decodes a 200 answer.
func getJSON(ctx context.Context, url, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decode(resp, out)
}
