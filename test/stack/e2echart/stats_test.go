package e2echart

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/stack"
)

// scanJobRanOnTheNode checks that the scanned namespace's scan Pods ran on
// the real node and that their containers (Grype, the uploader) exited 0.
func scanJobRanOnTheNode(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	pods, err := c.CoreV1().Pods(scanned).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("no scan Pod in %s", scanned)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != stack.NodeName {
			t.Errorf("scan Pod %s ran on %q, want the real node %s", p.Name, p.Spec.NodeName, stack.NodeName)
		}
		var states []string
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			states = append(states, cs.Name+" "+containerState(cs))
		}
		t.Logf("scan Pod %s on %s: %s (%s)", p.Name, p.Spec.NodeName, p.Status.Phase, strings.Join(states, "; "))
	}
}

// summary is the part of the kubelet's /stats/summary read here.
type summary struct {
	Pods []struct {
		PodRef struct{ Name, Namespace string } `json:"podRef"`
		Memory *struct {
			WorkingSetBytes *uint64 `json:"workingSetBytes"`
			RSSBytes        *uint64 `json:"rssBytes"`
		} `json:"memory"`
	} `json:"pods"`
}

// podMemory logs each Crowsnest Pod's memory as the kubelet measures it
// (working set and RSS from /stats/summary, through the API server's node
// proxy) beside the chart's requests and limits, and fails for a Pod over
// its limit.
func podMemory(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", stack.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		t.Errorf("kubelet stats: %v", err)
		return
	}
	var s summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Errorf("kubelet stats: %v", err)
		return
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]corev1.PodSpec{}
	for _, p := range pods.Items {
		specs[p.Name] = p.Spec
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-45s %12s %12s %10s %10s\n", "pod", "working set", "rss", "request", "limit")
	for _, p := range s.Pods {
		spec, ok := specs[p.PodRef.Name]
		if p.PodRef.Namespace != namespace || !ok {
			continue
		}
		var ws, rss uint64
		if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
			ws = *p.Memory.WorkingSetBytes
		}
		if p.Memory != nil && p.Memory.RSSBytes != nil {
			rss = *p.Memory.RSSBytes
		}
		var req, lim int64
		for _, ctr := range spec.Containers {
			req += ctr.Resources.Requests.Memory().Value()
			lim += ctr.Resources.Limits.Memory().Value()
		}
		fmt.Fprintf(&b, "%-45s %10.1fMi %10.1fMi %8dMi %8dMi\n", p.PodRef.Name, mib(ws), mib(rss), req>>20, lim>>20)
		if lim > 0 && ws > uint64(lim) {
			t.Errorf("%s: working set %.1f MiB over its limit %d MiB", p.PodRef.Name, mib(ws), lim>>20)
		}
	}
	t.Logf("memory (kubelet /stats/summary) against the chart's requests and limits:\n%s", b.String())
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
