package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// Benchmark size (issue 7): 1,000 Pods over 300 digests in 10 namespaces,
// 10 scans at once (one per namespace's Scanner, executor parallelism 10).
// Without CROWSNEST_BENCH_E2E the same code runs once at smoke size (2
// namespaces, 6 digests, 12 Pods, the cold run only), so `make e2e` keeps
// every check in it working; `make bench-e2e` measures at full size.
var (
	benchFull    = os.Getenv("CROWSNEST_BENCH_E2E") != ""
	benchNS      = pick(benchFull, 10, 2)
	benchDigests = pick(benchFull, 300, 6)
	benchPods    = pick(benchFull, 1000, 12)
)

func pick(full bool, fullSize, smokeSize int) int {
	if full {
		return fullSize
	}
	return smokeSize
}

func benchNamespaces() []string {
	out := []string{"bench-latency"}
	for _, run := range []string{"cold", "warm"} {
		for i := range benchNS {
			out = append(out, fmt.Sprintf("bench-%s-%d", run, i))
		}
	}
	return out
}

// TestBenchE2E runs the scale benchmark twice on the same stack: "cold"
// right after start, then "warm" with 300 new digests. `make bench-e2e`.
func TestBenchE2E(t *testing.T) {
	needFull(t)
	runs := []string{"cold", "warm"}
	if !benchFull {
		runs = runs[:1]
	}
	var rows []string
	for _, run := range runs {
		rows = append(rows, benchRun(t, run))
	}
	table := "| Run | Time to all scanned | Scan Jobs / digests | Operator heap max | Operator CPU | results-api req/s | Pod running → report.stored on WebSocket p50 / p99 | → first scan.status p50 / p99 |\n|---|---|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	fmt.Println(table)
	if out := os.Getenv("CROWSNEST_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func benchRun(t *testing.T, run string) string {
	ctx := withTimeout(t, 20*time.Minute)
	ws := subscribeWS(t, shared.URL())
	cfg := rest.CopyConfig(shared.Cluster.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	digests := make([]registry.Image, benchDigests)
	for i := range digests {
		b, err := registry.Variant(fmt.Sprintf("bench-%s-%03d", run, i))
		if err != nil {
			t.Fatal(err)
		}
		if digests[i], err = shared.Registry.Push(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range benchNS {
		ns := fmt.Sprintf("bench-%s-%d", run, i)
		if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
			t.Fatal(err)
		}
		if err := shared.Client.Create(ctx, workload.Scanner(ns, 1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	jobs := watchJobs(t, "") // all namespaces; finished Jobs are TTL-deleted, so count creations
	created0 := metric(t, shared.Operator.MetricsURL(), "crowsnest_operator_jobs_created_total")
	cpu0 := metric(t, shared.Operator.MetricsURL(), "process_cpu_seconds_total")
	req0 := metric(t, shared.URL()+"/metrics", "crowsnest_results_api_http_request_duration_seconds_count")
	stopHeap, heapMax := sampleMax(shared.Operator.MetricsURL(), "go_memstats_heap_alloc_bytes")
	start := time.Now()
	// Pod p of namespace k runs digest k*30 + p%30: each digest lives in
	// one namespace, so one Job per digest is the right answer.
	perNS := benchDigests / benchNS
	var wg sync.WaitGroup
	errs := make(chan error, benchPods)
	for k := range benchNS {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := fmt.Sprintf("bench-%s-%d", run, k)
			for p := range benchPods / benchNS {
				img := digests[k*perNS+p%perNS]
				if _, err := kc.CoreV1().Pods(ns).Create(ctx, workload.Pod(ns, fmt.Sprintf("p-%03d", p), img.Ref(), false), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	created := time.Since(start)
	eventually(t, 18*time.Minute, "all digests scanned", func() error {
		n, err := lookupCount(ctx, digests)
		if err != nil {
			return err
		}
		if n < benchDigests {
			return fmt.Errorf("%d of %d scanned", n, benchDigests)
		}
		return nil
	})
	took := time.Since(start)
	stopHeap()
	cpu := metric(t, shared.Operator.MetricsURL(), "process_cpu_seconds_total") - cpu0
	reqs := metric(t, shared.URL()+"/metrics", "crowsnest_results_api_http_request_duration_seconds_count") - req0
	createdJobs := metric(t, shared.Operator.MetricsURL(), "crowsnest_operator_jobs_created_total") - created0
	seen := jobs.snapshot()
	nJobs := 0
	for _, img := range digests {
		nJobs += len(seen[img.Digest])
		if len(seen[img.Digest]) != 1 {
			t.Errorf("%s: %s has %d scan Jobs, want 1", run, img.Digest, len(seen[img.Digest]))
		}
	}
	if int(createdJobs) != benchDigests {
		t.Errorf("%s: operator created %v Jobs for %d digests", run, createdJobs, benchDigests)
	}
	// Latency per digest: its first Pod's imageID (Running) → WebSocket.
	var stored, status []time.Duration
	for i, img := range digests {
		k, p := i/perNS, i%perNS
		running, ok := imageIDs.get(fmt.Sprintf("bench-%s-%d", run, k), fmt.Sprintf("p-%03d", p))
		if !ok {
			continue
		}
		es := ws.of(img.Digest)
		if j := index(es, "report.stored"); j >= 0 {
			stored = append(stored, es[j].At.Sub(running))
		}
		if j := index(es, "scan.status"); j >= 0 {
			status = append(status, es[j].At.Sub(running))
		}
	}
	t.Logf("%s: pods created in %s, all scanned in %s", run, created.Round(time.Millisecond), took.Round(time.Millisecond))
	return fmt.Sprintf("| %s | %s (Pods created in %s) | %d / %d | %.0f MiB | %.1f s | %.1f | %s / %s (n=%d) | %s / %s (n=%d) |",
		run, took.Round(100*time.Millisecond), created.Round(100*time.Millisecond), nJobs, benchDigests,
		heapMax()/(1<<20), cpu, reqs/took.Seconds(),
		pct(stored, 50), pct(stored, 99), len(stored), pct(status, 50), pct(status, 99), len(status))
}

func lookupCount(ctx context.Context, imgs []registry.Image) (int, error) {
	var body struct {
		Digests []string `json:"digests"`
	}
	for _, i := range imgs {
		body.Digests = append(body.Digests, i.Digest)
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, shared.URL()+"/api/v1/reports/lookup", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Reports []json.RawMessage `json:"reports"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	return len(out.Reports), nil
}

// metric sums every sample of a Prometheus metric family.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	v, err := scrape(url, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func scrape(url, name string) (float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return 0, fmt.Errorf("metric %s not found at %s", name, url)
	}
	return sum, nil
}

// sampleMax polls a gauge every 500ms until stopped and returns its maximum.
func sampleMax(url, name string) (stop func(), max func() float64) {
	var mu sync.Mutex
	m := 0.0
	done := make(chan struct{})
	go func() {
		for {
			if v, err := scrape(url, name); err == nil {
				mu.Lock()
				m = maxf(m, v)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() { close(done) }, func() float64 { mu.Lock(); defer mu.Unlock(); return m }
}

func maxf(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "n/a"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(10 * time.Millisecond).String()
}
