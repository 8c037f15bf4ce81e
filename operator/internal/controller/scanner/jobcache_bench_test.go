package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/resultsclient"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// benchFleetDigests are the digests the benchmark Scanner's Pods run; the
// first fleetOverlap of them also have a running Job of another Scanner.
// fleetRunning of the fleet's Jobs run, as many as the cluster-wide cap
// (--max-concurrent-scans) the benchmark sets allows.
const (
	benchFleetDigests = 20
	fleetOverlap      = 10
	fleetRunning      = 50
)

// fleetJobSizes are the scan Job counts BenchmarkJobCache runs at:
// CROWSNEST_BENCH_JOBS (comma-separated, ascending), else 1,000 and 5,000,
// or 1,000 alone with CROWSNEST_BENCH_SMOKE.
func fleetJobSizes(b *testing.B) []int {
	v := os.Getenv("CROWSNEST_BENCH_JOBS")
	switch {
	case v != "":
		var sizes []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < fleetRunning*20 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
				b.Fatalf("CROWSNEST_BENCH_JOBS=%q: want ascending counts of at least %d", v, fleetRunning*20)
			}
			sizes = append(sizes, n)
		}
		return sizes
	case os.Getenv("CROWSNEST_BENCH_SMOKE") != "":
		return []int{fleetRunning * 20}
	}
	return []int{1000, 5000}
}

// BenchmarkJobCache measures what the fleet's scan Jobs cost one Scanner's
// reconcile and the operator's memory: n scan Jobs of other Scanners in
// four namespaces (50 running, as many as the cluster-wide cap the
// benchmark sets; the rest failed with their outcome recorded, as Jobs kept
// for a retry are), and a Scanner whose 20 Pods' digests all have reports,
// ten of them with a running Job elsewhere. Per reconcile it reports the
// Jobs the reconciler read from the cache (jobs-read/op, a counter with no
// noise) and the allocations; per Job, the heap of an informer holding only
// the Jobs, with the operator's cache options and Job indexes
// (cache-B/job), and the JSON size of one Job as the API server serves it
// and as the cache keeps it. The Jobs are created once and grow from one
// size to the next (docs/benchmarks.md, issue 30).
func BenchmarkJobCache(b *testing.B) {
	ctx := context.Background()
	ns := newNamespace(b)
	fleet := []string{newNamespace(b), newNamespace(b), newNamespace(b), newNamespace(b)}
	api := resultsapitest.Start(b)
	for i := range benchFleetDigests {
		putReport(b, api, testDigest(5000+i))
		runPod(b, ns, fmt.Sprintf("app-%02d", i), nil, "ghcr.io/bench/app@"+testDigest(5000+i))
	}
	newScanner(b, ns)
	created := 0
	for _, n := range fleetJobSizes(b) {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			start := time.Now()
			parallel(n-created, 16, func(i int) { createFleetJob(b, fleet, created+i) })
			b.Logf("created %d scan jobs in %v", n-created, time.Since(start).Round(time.Millisecond))
			created = n
			benchJobCache(b, ctx, ns, fleet, api, n)
		})
	}
}

func benchJobCache(b *testing.B, ctx context.Context, ns string, fleet []string, api *resultsapitest.Server, n int) {
	perJob, full, cached := jobCacheSize(b, fleet, n)
	opts := testOptions()
	opts.WatchNamespaces = append([]string{ns}, fleet...)
	opts.MaxConcurrentScans = fleetRunning
	op := startOperator(b, ns, api.URL, "", opts)
	eventually(b, 2*time.Minute, "scanner sees every digest scanned", func() error {
		if st := getScanner(b, ns).Status; st.Images != benchFleetDigests || st.Scanned != benchFleetDigests {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	lookups, err := resultsclient.New(resultsclient.Options{BaseURL: api.URL, CacheTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	r := newReconciler(op.mgr, Deps{Lookup: lookups, Options: opts})
	counted := &jobCountingClient{Client: r.Client}
	r.Client = counted
	r.pods = startPodCache(b, ns)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "default"}}
	if _, err := r.Reconcile(ctx, req); err != nil { // warms the lookup cache
		b.Fatal(err)
	}
	counted.jobs.Store(0)
	reconciles := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
		reconciles++
	}
	b.StopTimer()
	b.ReportMetric(float64(counted.jobs.Load())/float64(reconciles), "jobs-read/op")
	b.ReportMetric(perJob, "cache-B/job")
	b.ReportMetric(float64(full), "job-json-B")
	b.ReportMetric(float64(cached), "cached-job-json-B")
}

// jobCacheSize starts an informer on the Jobs of fleet alone, with the
// operator's cache options and Job indexes, and returns its heap per Job
// once it holds all n, and the JSON size of one Job as served and as
// cached.
func jobCacheSize(b *testing.B, fleet []string, n int) (perJob float64, full, cached int) {
	opts := CacheOptions(fleet...)
	opts.Scheme = scheme
	var transform toolscache.TransformFunc
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*batchv1.Job); ok {
			transform = by.Transform
		}
	}
	var job batchv1.Job
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: fleet[0], Name: fleetJobName(0)}, &job); err != nil {
		b.Fatal(err)
	}
	full = jsonSize(b, job.DeepCopy())
	t, err := transform(job.DeepCopy())
	if err != nil {
		b.Fatal(err)
	}
	cached = jsonSize(b, t)

	before := heapMiB()
	c, err := cache.New(restConfig, opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := indexJobs(ctx, c); err != nil {
		b.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	eventually(b, time.Minute, "job cache holds every job", func() error {
		var list batchv1.JobList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d jobs cached, want %d", len(list.Items), n)
		}
		return nil
	})
	perJob = (heapMiB() - before) * (1 << 20) / float64(n)
	runtime.KeepAlive(c)
	return perJob, full, cached
}

func jsonSize(b *testing.B, obj any) int {
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	return len(raw)
}

func fleetJobName(i int) string { return fmt.Sprintf("scan-fleet-%05d", i) }

// createFleetJob creates the i-th Job of another Scanner ("fleet") as the
// operator builds it, without owner or finalizer (no Scanner exists to own
// it): every 20th of the first fleetRunning×20 runs (the first fleetOverlap
// of those for the benchmark Scanner's digests), the rest failed with their
// outcome recorded.
func createFleetJob(b *testing.B, fleet []string, i int) {
	ns := fleet[i%len(fleet)]
	digest := testDigest(100000 + i)
	running := i%20 == 0 && i/20 < fleetRunning
	if running && i/20 < fleetOverlap {
		digest = testDigest(5000 + i/20)
	}
	s := &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet", UID: "0"}}
	job := scanjob.Build(scanjob.Params{Scanner: s, Digest: digest, Image: "ghcr.io/fleet/app@" + digest, Attempt: 1, Reason: "New",
		GrypeImage: "anchore/grype:v0.121.2", UploaderImage: "ghcr.io/crowsnest-dev/uploader:test", APIURL: "http://results-api:8080", TTL: 2 * time.Hour})
	job.Name, job.OwnerReferences, job.Finalizers = fleetJobName(i), nil, nil
	if !running {
		job.Annotations[scanjob.AnnotationOutcome] = string(eventsv1.OutcomeFailed)
		job.Annotations[scanjob.AnnotationFailure] = crowsnestv1alpha1.FailureImagePull + ": unauthorized"
	}
	if err := k8s.Create(context.Background(), job); err != nil {
		b.Fatal(err)
	}
	if running {
		return
	}
	setFinished(job, false)
	job.Status.Conditions[1].Message = "Job has reached the specified backoff limit"
	if err := k8s.Status().Update(context.Background(), job); err != nil {
		b.Fatal(err)
	}
}

// jobCountingClient counts the scan Jobs the reconciler's lists return.
type jobCountingClient struct {
	client.Client
	jobs atomic.Int64
}

func (c *jobCountingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Client.List(ctx, list, opts...)
	if jobs, ok := list.(*batchv1.JobList); ok {
		c.jobs.Add(int64(len(jobs.Items)))
	}
	return err
}
