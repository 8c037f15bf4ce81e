package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// notification is the part of the notifier's webhook data the test reads.
type notification struct {
	Route string `json:"route"`
	Items []struct {
		Kind      string   `json:"kind"`
		Namespace string   `json:"namespace"`
		Digest    string   `json:"digest"`
		Cause     string   `json:"cause"`
		Workloads []string `json:"workloads"`
		Dashboard string   `json:"dashboard"`
	} `json:"items"`
}

// TestNotifierTellsOnceAboutANewImage: a new image with critical findings
// starts running; the whole chain — operator, scan Job, results-api's
// findings.changed, the operator's inventory, the notifier built only on
// those public events — ends in exactly one webhook notification that
// names the image, its namespace and workload, with a dashboard link.
func TestNotifierTellsOnceAboutANewImage(t *testing.T) {
	if shared.Notifications == nil {
		t.Fatal("the stack runs no notifier")
	}
	ctx := withTimeout(t, 4*time.Minute)
	const ns = "e2e-notify"
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 2, 0)); err != nil {
		t.Fatal(err)
	}
	// alpine 3.18's OpenSSL carries critical advisories in the offline DB.
	b, err := registry.Variant("notify")
	if err != nil {
		t.Fatal(err)
	}
	img, err := shared.Registry.Push(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Pod(ns, "app", img.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	about := func() []notification {
		var out []notification
		for _, n := range shared.Notifications.Received() {
			var d notification
			if err := json.Unmarshal(n.Data, &d); err != nil {
				t.Fatalf("notification %s: %v", n.ID, err)
			}
			for _, it := range d.Items {
				if it.Digest == img.Digest {
					out = append(out, d)
					break
				}
			}
		}
		return out
	}
	eventually(t, 3*time.Minute, "a notification about "+img.Digest, func() error {
		if n := len(about()); n == 0 {
			return fmt.Errorf("none yet (%d received in all)", len(shared.Notifications.Received()))
		}
		return nil
	})
	// The route's debounce window is 2 s: wait five of them for a second
	// message that must not come.
	time.Sleep(10 * time.Second)
	got := about()
	if len(got) != 1 {
		t.Fatalf("%d notifications about %s, want exactly 1: %+v", len(got), img.Digest, got)
	}
	for _, it := range got[0].Items {
		if it.Digest != img.Digest {
			continue
		}
		// "new" when the inventory reached the notifier before the findings
		// (new findings in a running image), "running" when the findings
		// came first (a newly running workload with critical findings):
		// either way one notification.
		if it.Namespace != ns || (it.Kind != "new" && it.Kind != "running") || !strings.HasSuffix(it.Dashboard, "/images/"+img.Digest) ||
			len(it.Workloads) != 1 || it.Workloads[0] != "Pod/app" {
			t.Errorf("notification item %+v, want kind new or running in %s for Pod/app with a dashboard link", it, ns)
		}
	}
}

// TestNATSFileStoreLimitIsFixed: the stack's NATS has the chart's 1 GiB
// file-store limit, not one derived from the free disk, so the notifier's
// 256 MiB state bucket is admitted however full the machine's disk is (a CI
// run on a disk with a few hundred MB free lost the notifier to
// "insufficient storage resources").
func TestNATSFileStoreLimitIsFixed(t *testing.T) {
	var jsz struct {
		Config struct {
			MaxStorage int64 `json:"max_storage"`
		} `json:"config"`
	}
	getJSON(withTimeout(t, 30*time.Second), t, fmt.Sprintf("http://127.0.0.1:%d/jsz", shared.NATS.MonitorPort), &jsz)
	if jsz.Config.MaxStorage != 1<<30 {
		t.Errorf("JetStream max_storage = %d, want %d (the chart's maxFileStore)", jsz.Config.MaxStorage, 1<<30)
	}
}
