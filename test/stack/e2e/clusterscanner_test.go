package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// clusterScannerNamespaces are the namespaces TestClusterScannerScansEachDigestOnce
// covers (results-api's --allowed-service-accounts lists them).
var clusterScannerNamespaces = func() []string {
	ns := make([]string, 10)
	for i := range ns {
		ns[i] = fmt.Sprintf("e2e-cs-%02d", i)
	}
	return ns
}()

// TestClusterScannerScansEachDigestOnce onboards 10 namespaces with one
// ClusterScanner (namespaces without a Scanner or a scan ServiceAccount of
// their own: the ClusterScanner creates both). The namespaces share 5 new
// digests, each running in 6 of them. Each digest is scanned by exactly one
// Job in the whole cluster and announced by exactly one image.needed; the
// ClusterScanner's status and `kubectl get clusterscanners` show the totals
// over its namespaces, and the dashboard lists the images.
func TestClusterScannerScansEachDigestOnce(t *testing.T) {
	needFull(t)
	const digests, perNamespace = 5, 3
	ctx := withTimeout(t, 10*time.Minute)
	natsRec := subscribeNATS(t, shared.NATS.URL())
	jobs := watchJobs(t, metav1.NamespaceAll)

	imgs := make([]registry.Image, digests)
	for i := range imgs {
		b, err := registry.Variant(fmt.Sprintf("cs-shared-%d", i))
		if err == nil {
			imgs[i], err = shared.Registry.Push(ctx, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"crowsnest.dev/e2e": "cluster-scanner"}
	for _, ns := range clusterScannerNamespaces {
		if err := workload.CreateNamespace(ctx, shared.Client, ns, labels); err != nil {
			t.Fatal(err)
		}
	}
	cs := &crowsnestv1alpha1.ClusterScanner{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-cluster"},
		Spec: crowsnestv1alpha1.ClusterScannerSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels},
			ScannerTemplate: crowsnestv1alpha1.ScannerSpec{
				IgnoreLabel: workload.IgnoreLabel, MaxConcurrentScans: 10,
				ScanTimeout: &metav1.Duration{Duration: 5 * time.Minute},
			},
		},
	}
	if err := shared.Client.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shared.Client.Delete(ctx, cs, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})

	// Namespace i runs digests i, i+1 and i+2 (mod 5): every digest runs
	// in 6 namespaces, every namespace sees 3 digests.
	for i, ns := range clusterScannerNamespaces {
		for k := range perNamespace {
			img := imgs[(i+k)%digests]
			if err := shared.Client.Create(ctx, workload.Pod(ns, img.Name, img.Ref(), false)); err != nil {
				t.Fatal(err)
			}
		}
	}

	eventually(t, 6*time.Minute, "every shared digest scanned", func() error {
		for _, img := range imgs {
			if _, err := getReport(ctx, img.Digest); err != nil {
				return err
			}
		}
		return nil
	})
	want := int32(len(clusterScannerNamespaces) * perNamespace)
	eventually(t, 2*time.Minute, "ClusterScanner totals", func() error {
		got := &crowsnestv1alpha1.ClusterScanner{}
		if err := shared.Client.Get(ctx, client.ObjectKeyFromObject(cs), got); err != nil {
			return err
		}
		st := got.Status
		if st.Namespaces != int32(len(clusterScannerNamespaces)) || st.Images != want || st.Scanned != want || st.Failed != 0 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})

	// Exactly one Job and one image.needed per digest in the whole cluster;
	// a moment longer for a late duplicate to show.
	time.Sleep(3 * time.Second)
	seen := jobs.snapshot()
	for _, img := range imgs {
		if n := len(seen[img.Digest]); n != 1 {
			t.Errorf("%s: want one Job cluster-wide, got %v", img.Name, seen[img.Digest])
		}
		if n := count(natsRec.of(img.Digest), "image.needed"); n != 1 {
			t.Errorf("%s: want one image.needed, got %d (%s)", img.Name, n, kinds(natsRec.of(img.Digest)))
		}
	}

	// What an administrator types, through the CRD's print columns.
	kubectl := filepath.Join(shared.Options.Bin.KubeAssets, "kubectl")
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig="+shared.Cluster.Kubeconfig,
		"get", "clusterscanners", cs.Name, "--no-headers").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get clusterscanners: %v\n%s", err, out)
	}
	// NAME NAMESPACES IMAGES SCANNED FAILED READY AGE
	fields := strings.Fields(string(out))
	wantFields := []string{cs.Name, "10", fmt.Sprint(want), fmt.Sprint(want), "0", "True"}
	if len(fields) < len(wantFields) || !slices.Equal(fields[:len(wantFields)], wantFields) {
		t.Errorf("kubectl get clusterscanners: got %q, want it to start with %q", strings.TrimSpace(string(out)), wantFields)
	}

	repos := make([]string, len(imgs))
	for i, img := range imgs {
		repos[i] = img.Repo
	}
	dashboardShows(t, ctx, repos)

	// Deleting the ClusterScanner removes what it generated.
	if err := shared.Client.Delete(ctx, cs, client.PropagationPolicy(metav1.DeletePropagationForeground), &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "generated Scanners deleted", func() error {
		var scanners crowsnestv1alpha1.ScannerList
		for _, ns := range clusterScannerNamespaces {
			if err := shared.Client.List(ctx, &scanners, client.InNamespace(ns)); err != nil {
				return err
			}
			if len(scanners.Items) > 0 {
				return fmt.Errorf("%s still has Scanner %s", ns, scanners.Items[0].Name)
			}
		}
		return nil
	})
}
