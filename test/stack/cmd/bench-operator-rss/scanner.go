package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// AnnotationRequestedAt asks the operator for a full reconcile of a
// Scanner (operator/internal/controller.AnnotationRequestedAt).
const AnnotationRequestedAt = "crowsnest.dev/requested-at"

// ScannerName is the name of the benchmark's Scanners.
const ScannerName = "default"

func createScanner(ctx context.Context, c client.Client, ns string, maxScans int) error {
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: ScannerName, Namespace: ns}}
	s.Spec.MaxConcurrentScans = int32(maxScans)
	if err := c.Create(ctx, s); err != nil {
		return fmt.Errorf("create scanner in %s: %w", ns, err)
	}
	return nil
}

// clusterScannerGVK is written as unstructured so that this command builds
// whether or not operator/api has the ClusterScanner type yet.
var clusterScannerGVK = schema.GroupVersionKind{Group: "crowsnest.dev", Version: "v1alpha1", Kind: "ClusterScanner"}

// createClusterScanner covers the namespaces labelled LabelCovered.
func createClusterScanner(ctx context.Context, c client.Client, maxScans int) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "bench"},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{LabelCovered: "true"}},
			"scannerTemplate":   map[string]any{"maxConcurrentScans": int64(maxScans)},
		},
	}}
	u.SetGroupVersionKind(clusterScannerGVK)
	if err := c.Create(ctx, u); err != nil {
		return fmt.Errorf("create cluster scanner: %w", err)
	}
	return nil
}

// resetStatus clears a Scanner's status, so that a freshly started
// operator's sync is seen when it writes the counts again.
func resetStatus(ctx context.Context, c client.Client, ns string) error {
	var s crowsnestv1alpha1.Scanner
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ScannerName}, &s); err != nil {
		return err
	}
	s.Status = crowsnestv1alpha1.ScannerStatus{}
	return c.Status().Update(ctx, &s)
}

// requestReconcile sets the requested-at annotation to now.
func requestReconcile(ctx context.Context, c client.Client, ns string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationRequestedAt, time.Now().UTC().Format(time.RFC3339Nano))
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: ScannerName, Namespace: ns}}
	return c.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// scanTotals sums the status counts of every Scanner in the cluster.
type scanTotals struct {
	Scanners, Images, Scanned, Queued, Scanning, Failed int
}

// done says whether there are the given number of Scanners and all their
// images are scanned, none queued, being scanned or failed.
func (t scanTotals) done(scanners int) bool {
	return t.Scanners == scanners && t.Images > 0 && t.Scanned == t.Images && t.Queued == 0 && t.Scanning == 0 && t.Failed == 0
}

func (t scanTotals) String() string {
	return fmt.Sprintf("%d scanners: images %d scanned %d queued %d scanning %d failed %d",
		t.Scanners, t.Images, t.Scanned, t.Queued, t.Scanning, t.Failed)
}

func totals(ctx context.Context, c client.Client) (scanTotals, error) {
	var t scanTotals
	var list crowsnestv1alpha1.ScannerList
	opts := []client.ListOption{client.Limit(500)}
	for {
		if err := c.List(ctx, &list, opts...); err != nil {
			return t, err
		}
		for _, s := range list.Items {
			t.Scanners++
			t.Images += int(s.Status.Images)
			t.Scanned += int(s.Status.Scanned)
			t.Queued += int(s.Status.Queued)
			t.Scanning += int(s.Status.Scanning)
			t.Failed += int(s.Status.Failed)
		}
		if list.Continue == "" {
			return t, nil
		}
		opts = []client.ListOption{client.Limit(500), client.Continue(list.Continue)}
	}
}
