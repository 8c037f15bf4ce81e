package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestResilience covers scenario 3's outages. Each case scans a fresh
// digest (an image pushed just for it), so the cases and the other tests
// do not see each other's events.
func TestResilience(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 8*time.Minute)
	ns := "e2e-resilience"
	natsRec := subscribeNATS(t, shared.NATS.URL())
	jobs := watchJobs(t, ns)
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 2, 0)); err != nil {
		t.Fatal(err)
	}
	// scan runs a Pod with a fresh image, calls during once its Job exists,
	// and waits until the digest is scanned with every event exactly once.
	scan := func(t *testing.T, name string, during func()) registry.Image {
		b, err := registry.Variant(name)
		if err != nil {
			t.Fatal(err)
		}
		img, err := shared.Registry.Push(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := shared.Client.Create(ctx, workload.Pod(ns, name, img.Ref(), false)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "scan job created", func() error {
			if len(jobs.snapshot()[img.Digest]) == 0 {
				return fmt.Errorf("no job for %s", img.Digest)
			}
			return nil
		})
		during()
		eventually(t, 4*time.Minute, "scanned, events once", func() error {
			if _, err := getReport(ctx, img.Digest); err != nil {
				return err
			}
			return checkNATSOnce(natsRec.of(img.Digest))
		})
		if n := len(jobs.snapshot()[img.Digest]); n != 1 {
			t.Errorf("want one Job, got %d", n)
		}
		return img
	}

	t.Run("results-api down during the upload", func(t *testing.T) {
		scan(t, "api-outage", func() {
			for _, api := range shared.APIs { // every replica: an outage, not a failover
				api.Stop()
			}
			time.Sleep(4 * time.Second) // the outage the uploader must ride out
			for _, api := range shared.APIs {
				if err := api.Start(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	})

	t.Run("results-api restarted loses nothing", func(t *testing.T) {
		// Reports stored before the restart above are all still there.
		for _, name := range []string{"api-outage"} {
			img := image(t, name)
			if _, err := getReport(ctx, img.Digest); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})

	t.Run("NATS restarted mid-scan", func(t *testing.T) {
		scan(t, "nats-outage", func() {
			shared.NATS.Stop()
			time.Sleep(3 * time.Second)
			if err := shared.NATS.Start(ctx); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("operator killed mid-scan", func(t *testing.T) {
		scan(t, "operator-crash", func() {
			shared.Operator.Kill()
			if err := shared.Operator.Start(ctx); err != nil {
				t.Fatal(err)
			}
		})
	})
}
