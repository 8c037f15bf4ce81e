package scanner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/operator/internal/podcache"
	"github.com/crowsnest-dev/crowsnest/operator/internal/resultsclient"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

// benchSize is the size of the operator benchmark: full size for numbers
// (make bench-operator), or small when CROWSNEST_BENCH_SMOKE is set (CI runs
// every benchmark once for its checks only).
type benchSize struct {
	pods, digests, newPods int
	idle                   time.Duration
}

func operatorBenchSize() benchSize {
	size := benchSize{pods: 10000, digests: 500, newPods: 50, idle: 10 * time.Second}
	if os.Getenv("CROWSNEST_BENCH_SMOKE") != "" {
		size = benchSize{pods: 200, digests: 100, newPods: 10, idle: 2 * time.Second}
	}
	if v, err := strconv.Atoi(os.Getenv("CROWSNEST_BENCH_PODS")); err == nil && v > 0 {
		size.pods = v
	}
	return size
}

// BenchmarkOperatorScale measures the operator against CROWSNEST_BENCH_PODS
// Pods (default 10,000; 2 containers each, 500 distinct digests, all with
// reports in a real results-api) on envtest: heap, the cost of one full
// reconcile, lookup requests per reconcile, reconciles and timed requeues
// while idle, and Pod-status-to-Job latency with all those Pods present.
// The setup runs once; b.Loop repeats only the reconcile (make bench-operator
// uses -benchtime 20x). CROWSNEST_BENCH_SMOKE shrinks it to 200 Pods and 100
// digests; every check still runs. CROWSNEST_BENCH_INVENTORY=on or off runs
// it with an embedded JetStream and the Pods owned by ReplicaSets of
// Deployments, with the inventory on or off (see benchInventory).
func BenchmarkOperatorScale(b *testing.B) {
	size := operatorBenchSize()
	pods, digests, half := size.pods, size.digests, size.digests/2
	if pods < half {
		b.Fatalf("%d pods cannot run %d digests", pods, digests)
	}
	ctx := context.Background()
	ns := newNamespace(b)
	api := resultsapitest.Start(b)
	start := time.Now()
	parallel(digests, 8, func(i int) { putReport(b, api, testDigest(1000+i)) })
	b.Logf("uploaded %d reports in %v", digests, time.Since(start).Round(time.Millisecond))

	inv := benchInventory(b, ns)
	start = time.Now()
	parallel(pods, 16, func(i int) {
		runOwnedPod(b, ns, fmt.Sprintf("app-%05d", i), nil, inv.owner(i),
			"ghcr.io/bench/a@"+testDigest(1000+i%half), "ghcr.io/bench/b@"+testDigest(1000+half+i%half))
	})
	b.Logf("created and started %d pods in %v", pods, time.Since(start).Round(time.Millisecond))
	newScanner(b, ns, func(s *crowsnestv1alpha1.ScannerSpec) { s.MaxConcurrentScans = 50 })

	heapBefore := heapMiB()
	start = time.Now()
	op := startOperator(b, ns, api.URL, inv.natsURL, inv.options())
	eventually(b, 5*time.Minute, "all digests scanned", func() error {
		st := getScanner(b, ns).Status
		if int(st.Images) != digests || int(st.Scanned) != digests {
			return fmt.Errorf("status %+v", st)
		}
		return inv.published()
	})
	b.Logf("operator synced %d pods in %v", pods, time.Since(start).Round(time.Millisecond))
	inv.settle()
	heap := heapMiB() - heapBefore

	// Idle: nothing changes, so nothing should run.
	reconcilesBefore, requeuesBefore := counterSum(b, "controller_runtime_reconcile_total"), counterSum(b, "crowsnest_operator_timed_requeues_total")
	time.Sleep(size.idle)
	idleReconciles := counterSum(b, "controller_runtime_reconcile_total") - reconcilesBefore
	idleRequeues := counterSum(b, "crowsnest_operator_timed_requeues_total") - requeuesBefore

	// One full reconcile over all Pods, with the lookup cache off so that
	// every reconcile asks results-api (the worst case). The benchmark calls
	// a reconciler of its own on the manager's clients: the running one's
	// fields are not to be changed under its workers.
	uncached, err := resultsclient.New(resultsclient.Options{BaseURL: api.URL})
	if err != nil {
		b.Fatal(err)
	}
	cache := startPodCache(b, ns)
	r := newReconciler(op.mgr, Deps{Lookup: uncached, Options: testOptions()})
	r.pods = cache
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "default"}}
	n := 0
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	perReconcile := float64(uncached.Requests()) / float64(n)

	// The usual case: the answer is cached (--lookup-cache-ttl).
	cached, err := resultsclient.New(resultsclient.Options{BaseURL: api.URL, CacheTTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	r = newReconciler(op.mgr, Deps{Lookup: cached, Options: testOptions()})
	r.pods = cache
	const rounds = 20
	start = time.Now()
	for range rounds {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	cachedMs := float64(time.Since(start).Microseconds()) / rounds / 1000

	lat := podToJobLatency(b, ns, size.newPods)
	b.ReportMetric(cachedMs, "reconcile-cached-ms")
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(perReconcile, "lookups/reconcile")
	perTenSeconds := float64(10*time.Second) / float64(size.idle)
	b.ReportMetric(idleReconciles*perTenSeconds, "idle-reconciles/10s")
	b.ReportMetric(idleRequeues*perTenSeconds, "idle-timed-requeues/10s")
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "pod-to-job-p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "pod-to-job-p99-ms")
	b.ReportMetric(float64(pods), "pods")
}

// startPodCache runs a workload Pod cache of its own for a reconciler a
// benchmark or test calls directly (the manager's one is private to its reconciler).
func startPodCache(t testing.TB, ns string) *podcache.Cache {
	t.Helper()
	pods, err := podcache.New(restConfig, []string{ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pods.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	sync, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if err := pods.WaitForSync(sync); err != nil {
		t.Fatal(err)
	}
	return pods
}

// podToJobLatency starts n Pods with new, unscanned digests, one at a time,
// and measures from the status update that gives the Pod its imageID to the
// API server announcing the scan Job on a watch.
func podToJobLatency(b *testing.B, ns string, n int) []time.Duration {
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &batchv1.JobList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var out []time.Duration
	for i := range n {
		runPod(b, ns, fmt.Sprintf("new-%03d", i), nil, "ghcr.io/bench/new@"+testDigest(90000+i))
		t0 := time.Now()
		timeout := time.After(30 * time.Second)
	wait:
		for {
			select {
			case ev := <-w.ResultChan():
				switch ev.Type {
				case watch.Added:
					out = append(out, time.Since(t0))
					break wait
				case watch.Modified: // with NATS: the published annotation of an earlier Job
				default:
					b.Fatalf("unexpected job event %s", ev.Type)
				}
			case <-timeout:
				b.Fatalf("no job for pod %d within 30s", i)
			}
		}
	}
	sort.Slice(out, func(a, c int) bool { return out[a] < out[c] })
	return out
}

func parallel(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func heapMiB() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// benchInventory is the inventory side of BenchmarkOperatorScale, chosen by
// CROWSNEST_BENCH_INVENTORY: unset, the benchmark runs as it always has (no
// NATS, bare Pods); "on" or "off" start an embedded JetStream (before the
// heap baseline, so its own start is not counted) and give the Pods 100
// ReplicaSets, each of a Deployment, with the inventory on or off: the
// difference between the two is what the inventory costs.
type benchInv struct {
	b       testing.TB
	mode    string
	natsURL string
	owners  [][]metav1.OwnerReference
}

func benchInventory(b *testing.B, ns string) *benchInv {
	inv := &benchInv{b: b, mode: os.Getenv("CROWSNEST_BENCH_INVENTORY")}
	switch inv.mode {
	case "":
		return inv
	case "on", "off":
	default:
		b.Fatalf("CROWSNEST_BENCH_INVENTORY=%q: want on or off", inv.mode)
	}
	_, inv.natsURL = natstest.StartT(b)
	warmUpStream(b, inv.natsURL)
	for i := range 100 {
		labels := map[string]string{"app": fmt.Sprintf("app-%03d", i)}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: labels["app"], Namespace: ns},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)}}
		if err := k8s.Create(context.Background(), d); err != nil {
			b.Fatal(err)
		}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: labels["app"] + "-7d9f", Namespace: ns, OwnerReferences: controlledBy(b, d)},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)}}
		if err := k8s.Create(context.Background(), rs); err != nil {
			b.Fatal(err)
		}
		inv.owners = append(inv.owners, controlledBy(b, rs))
	}
	return inv
}

func (inv *benchInv) owner(i int) []metav1.OwnerReference {
	if len(inv.owners) == 0 {
		return nil
	}
	return inv.owners[i%len(inv.owners)]
}

func (inv *benchInv) options() Options {
	o := testOptions()
	o.Inventory = inventory.Options{Enabled: inv.mode == "on"}
	return o
}

// published is nil once the inventory's start-up snapshot went out (at
// once when it is off), so the heap is measured with it done.
func (inv *benchInv) published() error {
	if inv.mode != "on" {
		return nil
	}
	if counterSum(inv.b, "crowsnest_operator_inventory_snapshots_published_total") == 0 {
		return errors.New("no inventory snapshot published yet")
	}
	return nil
}

// warmUpStream creates the stream and stores a message before the heap
// baseline: the embedded server lives in the benchmark's process, and its
// stream's own memory is not the operator's (see also settle).
func warmUpStream(b *testing.B, url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := eventsv1.EnsureStream(ctx, js); err != nil {
		b.Fatal(err)
	}
	if _, err := js.Publish(ctx, "crowsnest.bench.warmup", make([]byte, 16<<10)); err != nil {
		b.Fatal(err)
	}
}

// settle waits, with NATS (inventory on or off alike), until the embedded
// server has dropped its cache of the stream's last block (10 s after the
// last write): its file store holds that cache in pooled buffers of 256 KiB
// to 8 MiB, sized by what was written, so a heap taken sooner counts the
// server's buffer for the inventory's first snapshot as the operator's.
func (inv *benchInv) settle() {
	if inv.mode != "" {
		time.Sleep(12 * time.Second)
	}
}
