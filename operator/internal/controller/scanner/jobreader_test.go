package scanner

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// TestIndexerReadsMatchList: with a cluster-wide cache (as the operator
// runs without --watch-namespaces) jobReader reads the Job informer's
// indexer, and it answers each of the reconciler's reads with the same
// Jobs as the cache's List by field index — which is what it reads with a
// cache of several namespaces (there it has no indexer) — also after a Job
// ends and its active index entry must go. The same for a namespace's
// Scanners (namespaceScanners). Jobs of other tests in the shared API
// server are left out by namespace.
func TestIndexerReadsMatchList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t)
	d := func(i int) string { return testDigest(7000 + i) }
	newScanner(t, ns)
	other := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}}
	if err := k8s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	var created []*batchv1.Job
	for i, spec := range []struct {
		scanner string
		digest  int
		ended   bool
		noHash  bool
	}{
		{"a", 1, false, false}, {"a", 2, true, false}, {"a", 3, false, true},
		{"b", 1, true, false}, {"b", 2, false, false}, {"b", 4, false, false},
	} {
		s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: spec.scanner, UID: "0"}}
		job := scanjob.Build(scanjob.Params{Scanner: s, Digest: d(spec.digest), Image: "ghcr.io/org/app@" + d(spec.digest), Attempt: 1, Reason: "New",
			GrypeImage: "anchore/grype:v0.121.2", UploaderImage: "ghcr.io/crowsnest-dev/uploader:test", APIURL: "http://results-api:8080", TTL: time.Hour})
		job.Name, job.OwnerReferences, job.Finalizers = fmt.Sprintf("scan-reader-%d", i), nil, nil
		if spec.noHash {
			delete(job.Labels, scanjob.LabelDigestHash) // not a scan Job to the reconciler's reads
		}
		if err := k8s.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
		if spec.ended {
			setFinished(job, false)
			if err := k8s.Status().Update(ctx, job); err != nil {
				t.Fatal(err)
			}
		}
		created = append(created, job)
	}

	opts := CacheOptions()
	opts.Scheme = scheme
	c, err := cache.New(restConfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := indexJobs(ctx, c); err != nil {
		t.Fatal(err)
	}
	fast, err := newJobReader(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if fast.idx == nil {
		t.Fatal("a cluster-wide cache gave no indexer: the reconciler would list through the client")
	}
	scanners, err := scannerIndexer(ctx, c)
	if err != nil || scanners == nil {
		t.Fatalf("a cluster-wide cache gave Scanner indexer %v, %v", scanners, err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	byHash := func(i int) labels.Selector {
		return labels.SelectorFromSet(labels.Set{scanjob.LabelDigestHash: scanjob.DigestHash(d(i))})
	}
	reads := []struct {
		name             string
		field, value, in string
		sel              labels.Selector
		want             []string
	}{
		{"own jobs of a", jobScannerField, "a", ns, scanJobLabel, []string{"scan-reader-0", "scan-reader-1"}},
		{"own jobs of b", jobScannerField, "b", ns, scanJobLabel, []string{"scan-reader-3", "scan-reader-4", "scan-reader-5"}},
		{"jobs of digest 1", jobDigestField, d(1), "", scanJobLabel, []string{"scan-reader-0", "scan-reader-3"}},
		{"jobs of digest 2 by hash", jobDigestField, d(2), "", byHash(2), []string{"scan-reader-1", "scan-reader-4"}},
		{"jobs of digest 3 (no hash label)", jobDigestField, d(3), "", scanJobLabel, nil},
		{"running jobs", jobActiveField, "true", "", scanJobLabel, []string{"scan-reader-0", "scan-reader-4", "scan-reader-5"}},
	}
	check := func(stage string) {
		t.Helper()
		for _, r := range reads {
			viaIndex, err := fast.jobs(ctx, c, r.field, r.value, r.in, r.sel)
			if err != nil {
				t.Fatalf("%s: %s: indexer: %v", stage, r.name, err)
			}
			viaList, err := jobReader{}.jobs(ctx, c, r.field, r.value, r.in, r.sel)
			if err != nil {
				t.Fatalf("%s: %s: list: %v", stage, r.name, err)
			}
			if a, b := namesIn(ns, viaIndex), namesIn(ns, viaList); !slices.Equal(a, b) || !slices.Equal(a, r.want) {
				t.Errorf("%s: %s: indexer %v, list %v, want %v", stage, r.name, a, b, r.want)
			}
		}
	}
	check("created")
	viaIndex, err := (&namespaceScanners{idx: scanners}).list(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	viaList, err := (&namespaceScanners{reader: c}).list(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]string{ns + "/default", ns + "/other"})
	if a, b := requestNames(viaIndex), requestNames(viaList); a != want || b != want {
		t.Errorf("scanners of the namespace: indexer %s, list %s, want %s", a, b, want)
	}

	// b's Job for digest 4 ends: the running read drops it on both paths.
	job := created[5]
	setFinished(job, true)
	if err := k8s.Status().Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	reads[5].want = []string{"scan-reader-0", "scan-reader-4"}
	eventually(t, 10*time.Second, "the cache shows the ended Job", func() error {
		var got batchv1.Job
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), &got); err != nil {
			return err
		}
		if jobOutcome(&got, nil).phase == jobActive {
			return fmt.Errorf("still active")
		}
		return nil
	})
	check("after an end")

	// A cache of several namespaces has one informer per namespace: no
	// indexer to read, so the reader lists.
	nsOpts := CacheOptions(ns, newNamespace(t))
	nsOpts.Scheme = scheme
	nc, err := cache.New(restConfig, nsOpts)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := newJobReader(ctx, nc); err != nil || r.idx != nil {
		t.Errorf("a cache of two namespaces gave indexer %v, %v; want none", r.idx, err)
	}
	if idx, err := scannerIndexer(ctx, nc); err != nil || idx != nil {
		t.Errorf("a cache of two namespaces gave Scanner indexer %v, %v; want none", idx, err)
	}
}

// requestNames prints the sorted namespace/name of reqs.
func requestNames(reqs []reconcile.Request) string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.String()
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// namesIn returns the sorted names of the Jobs in ns.
func namesIn(ns string, jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		if j.Namespace == ns {
			out = append(out, j.Name)
		}
	}
	slices.Sort(out)
	return out
}
