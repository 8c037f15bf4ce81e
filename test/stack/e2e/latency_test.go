package e2e

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestBenchLatency measures, on an otherwise idle stack, the time from a
// Pod with a new digest getting its imageID (Running) to the first
// scan.status on the dashboard's WebSocket and to report.stored, one Pod at
// a time (`make bench-e2e`).
func TestBenchLatency(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 10*time.Minute)
	ws := subscribeWS(t, shared.URL())
	ns := "bench-latency"
	jobs := watchJobs(t, ns)
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 1, 0)); err != nil {
		t.Fatal(err)
	}
	n := pick(benchFull, 20, 3) // smoke size in make e2e, see bench_test.go
	var status, stored, jobToStored []time.Duration
	for i := range n {
		b, err := registry.Variant(fmt.Sprintf("latency-%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		img, err := shared.Registry.Push(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("p-%02d", i)
		if err := shared.Client.Create(ctx, workload.Pod(ns, name, img.Ref(), false)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "report on the websocket", func() error {
			if index(ws.of(img.Digest), "report.stored") < 0 {
				return fmt.Errorf("no report.stored yet for %s", name)
			}
			return nil
		})
		running, ok := imageIDs.get(ns, name)
		if !ok {
			t.Fatalf("%s: imageID time not recorded", name)
		}
		es := ws.of(img.Digest)
		status = append(status, es[index(es, "scan.status")].At.Sub(running))
		stored = append(stored, es[index(es, "report.stored")].At.Sub(running))
		created, ok := jobs.createdAt(img.Digest)
		if !ok {
			t.Fatalf("%s: no scan Job seen", name)
		}
		jobToStored = append(jobToStored, es[index(es, "report.stored")].At.Sub(created))
	}
	line := fmt.Sprintf("| idle, one Pod at a time (n=%d) | Pod running → first scan.status p50 / p99 | %s / %s |\n| | Pod running → report.stored p50 / p99 | %s / %s |\n| | scan Job created (1 s resolution) → report.stored p50 / p99 | %s / %s |\n",
		n, pct(status, 50), pct(status, 99), pct(stored, 50), pct(stored, 99), pct(jobToStored, 50), pct(jobToStored, 99))
	fmt.Print(line)
	if out := os.Getenv("CROWSNEST_BENCH_OUT"); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("\n" + line); err != nil {
			t.Fatal(err)
		}
	}
}
