package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

var snapshotSeq int

// reportInventory publishes what the operator would for namespace ns (there
// is no operator here): an inventory.snapshot of the Pods the API server
// holds, built with the plugin's own reading of owners and imageIDs. It
// returns once results-api answers the namespace filter with exactly the
// reported digests of that snapshot.
func (s *seeded) reportInventory(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byWorkload := map[[2]string]*eventsv1.InventoryWorkload{}
	for digest, ws := range inventory.Workloads(pods.Items) {
		for _, w := range ws {
			k := [2]string{w.Kind, w.Name}
			iw := byWorkload[k]
			if iw == nil {
				iw = &eventsv1.InventoryWorkload{Kind: w.Kind, Name: w.Name}
				byWorkload[k] = iw
			}
			for _, c := range w.Containers {
				iw.Containers = append(iw.Containers, eventsv1.InventoryContainer{Name: c, Image: "img", Digest: digest, Pods: w.Pods})
			}
		}
	}
	snap := eventsv1.InventorySnapshot{Namespace: ns, Workloads: []eventsv1.InventoryWorkload{}}
	for _, w := range byWorkload {
		sort.Slice(w.Containers, func(i, j int) bool {
			a, b := w.Containers[i], w.Containers[j]
			return a.Name < b.Name || (a.Name == b.Name && a.Digest < b.Digest)
		})
		snap.Workloads = append(snap.Workloads, *w)
	}
	sort.Slice(snap.Workloads, func(i, j int) bool {
		a, b := snap.Workloads[i], snap.Workloads[j]
		return a.Kind < b.Kind || (a.Kind == b.Kind && a.Name < b.Name)
	})
	snapshotSeq++
	ev, err := eventsv1.New(eventsv1.SourceOperator, eventsv1.TypeInventorySnapshot, eventsv1.InventoryID(snap), "", time.Now(), snap)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.js.Publish(ctx, eventsv1.SubjectInventorySnapshot, data, jetstream.WithMsgID(ev.ID)); err != nil {
		t.Fatal(err)
	}

	var want []string
	for _, d := range snap.Digests() {
		for _, f := range s.fx {
			if f.Digest == d {
				want = append(want, d)
			}
		}
	}
	sort.Strings(want)
	var got []string
	for range 600 { // bounded: at most 30 s
		got = s.listedIn(t, ns)
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("results-api lists %v in %s, want %v from the snapshot", got, ns, want)
}

// listedIn is what results-api lists for ?namespace=ns, sorted.
func (s *seeded) listedIn(t *testing.T, ns string) []string {
	t.Helper()
	resp, err := s.Client().Get(s.URL + "/api/v1/reports?namespace=" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var list resultsapi.ReportList
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		t.Fatalf("list namespace %s: HTTP %d", ns, resp.StatusCode)
	}
	var out []string
	for _, it := range list.Items {
		out = append(out, it.Digest)
	}
	sort.Strings(out)
	return out
}
