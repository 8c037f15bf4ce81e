package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
)

// vexStatementsPerDoc is how many statements each benchmark document has.
const vexStatementsPerDoc = 20

// createVEXDocuments imports n OpenVEX documents of 20 statements each,
// about the seeded images (image i runs in ns-(i mod 200); its finding j
// is CVE-2025-((7i + 131j) mod 2000) in pkg<j>): documents 0–9 are
// cluster-wide and say under_investigation about finding 3 of images
// 20d…20d+19 (annotations); the others, in ns-(d mod 200), say
// not_affected about finding 2 of the images of their namespace — so
// ns-0042's document covers image 42's CVE-2025-00556.
func createVEXDocuments(ctx context.Context, b *testing.B, dc dynamic.Interface, n, reports int) {
	b.Helper()
	for d := range n {
		ns := d % 200
		var stmts []map[string]any
		for s := range vexStatementsPerDoc {
			img, j, st := ns+200*s, 2, map[string]any{"status": "not_affected", "justification": "vulnerable_code_not_in_execute_path"}
			if d < 10 {
				img, j, st = d*vexStatementsPerDoc+s, 3, map[string]any{"status": "under_investigation"}
			}
			if img >= reports {
				break
			}
			st["vulnerability"] = map[string]any{"name": fmt.Sprintf("CVE-2025-%05d", (img*7+j*131)%2000)}
			st["products"] = []any{map[string]any{"@id": fmt.Sprintf("pkg:oci/app@sha256%%3A%064x", img),
				"subcomponents": []any{map[string]any{"@id": fmt.Sprintf("pkg:apk/alpine/pkg%d@1.%d", j, j)}}}}
			stmts = append(stmts, st)
		}
		doc, err := json.Marshal(map[string]any{"@context": "https://openvex.dev/ns/v0.2.0", "@id": fmt.Sprintf("urn:bench:vex:%d", d),
			"author": "benchmark", "timestamp": "2026-11-01T00:00:00Z", "version": 1, "statements": stmts})
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crowsnest.dev/v1alpha1", "kind": exception.KindVEXDocument,
			"spec": map[string]any{"document": string(doc)}}}
		u.SetName(fmt.Sprintf("vex%04d", d))
		res := dc.Resource(exception.VEXDocumentResource).Namespace(fmt.Sprintf("ns-%04d", ns))
		if d < 10 {
			u.SetKind(exception.KindClusterVEXDocument)
			res = dc.Resource(exception.ClusterVEXDocumentResource).Namespace("")
		}
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			b.Fatalf("create VEX document %d: %v", d, err)
		}
	}
}
