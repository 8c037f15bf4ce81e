package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestScanLifecycle covers issue scenarios 1 and 2 on one namespace:
// Pods appear → one Job per distinct digest (the ignored Pod skipped) →
// Grype scans each image from the local registry → reports stored → an
// independent NATS subscriber and a WebSocket client each see every event
// once, in order → the Scanner is Ready with the right counts; then a new
// Pod with an already-scanned digest makes no Job and no event.
func TestScanLifecycle(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 6*time.Minute)
	ns := "e2e-scan"
	natsRec := subscribeNATS(t, shared.NATS.URL())
	wsRec := subscribeWS(t, shared.URL())
	jobs := watchJobs(t, ns)
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 2, 0)); err != nil {
		t.Fatal(err)
	}
	pods := []workload.PodSpec{
		{Name: "web-1", Image: "alpine"}, {Name: "web-2", Image: "alpine"},
		{Name: "api", Image: "debian"}, {Name: "frontend", Image: "node-app"},
		{Name: "legacy", Image: "internal", Ignored: true},
		{Name: "tools", Image: "go-app"}, // the stack fails to start without it (RequireGoDemo)
	}
	want := map[string]string{} // digest → image name
	for _, p := range pods {
		img := image(t, p.Image)
		if !p.Ignored {
			want[img.Digest] = p.Image
		}
		if err := shared.Client.Create(ctx, workload.Pod(ns, p.Name, img.Ref(), p.Ignored)); err != nil {
			t.Fatal(err)
		}
	}
	ignored := image(t, "internal").Digest

	t.Run("one scan per digest, events once and in order", func(t *testing.T) {
		eventually(t, 4*time.Minute, "every digest scanned", func() error {
			for d, name := range want {
				if _, err := getReport(ctx, d); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				if err := checkNATSOnce(natsRec.of(d)); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			return nil
		})
		for d, name := range want {
			r, err := getReport(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range r.Counts {
				total += n
			}
			if total == 0 {
				t.Errorf("%s: Grype found nothing; the demo DB has advisories for it: %+v", name, r)
			}
			// Provenance: the scan Pod's Grype names the DB it loaded.
			if _, err := time.Parse(time.RFC3339, r.DBBuilt); err != nil || !strings.HasPrefix(r.DBSchema, "v6") {
				t.Errorf("%s: the scan's report records DB built %q, schema %q; want the DB the scan Pod's Grype loaded", name, r.DBBuilt, r.DBSchema)
			}
		}
		got := jobs.snapshot()
		for d, name := range want {
			if len(got[d]) != 1 {
				t.Errorf("%s: want one Job, got %v", name, got[d])
			}
		}
		if len(got[ignored]) != 0 || len(natsRec.of(ignored)) != 0 {
			t.Errorf("ignored Pod's digest was scanned: jobs %v, events %s", got[ignored], kinds(natsRec.of(ignored)))
		}
		if len(got) != len(want) {
			t.Errorf("want %d Jobs, got %v", len(want), got)
		}
		eventually(t, 30*time.Second, "WebSocket saw each report once, after its scan status", func() error {
			for d, name := range want {
				es := wsRec.of(d)
				if count(es, "report.stored") != 1 {
					return fmt.Errorf("%s: %s", name, kinds(es))
				}
				if s := index(es, "scan.status"); s < 0 || s > index(es, "report.stored") {
					return fmt.Errorf("%s: no scan.status before report.stored: %s", name, kinds(es))
				}
				if last := lastStatus(es); last != "done" {
					return fmt.Errorf("%s: last scan status %q: %s", name, last, kinds(es))
				}
			}
			return nil
		})
	})

	t.Run("Scanner Ready with the right counts", func(t *testing.T) {
		eventually(t, 60*time.Second, "scanner ready", func() error {
			var s crowsnestv1alpha1.Scanner
			if err := shared.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: workload.ScannerName}, &s); err != nil {
				return err
			}
			st := s.Status
			if !meta.IsStatusConditionTrue(st.Conditions, "Ready") {
				return fmt.Errorf("not Ready: %+v", st)
			}
			n := int32(len(want))
			if st.Images != n || st.Scanned != n || st.Queued != 0 || st.Scanning != 0 || st.Failed != 0 {
				return fmt.Errorf("counts %+v, want %d images all scanned", st, n)
			}
			return nil
		})
	})

	t.Run("the dashboard shows them", func(t *testing.T) {
		var repos []string
		for _, name := range want {
			repos = append(repos, image(t, name).Repo)
		}
		dashboardShows(t, ctx, repos)
	})

	t.Run("a known digest makes no Job and no event", func(t *testing.T) {
		alpine := image(t, "alpine")
		before := len(natsRec.of(alpine.Digest))
		if err := shared.Client.Create(ctx, workload.Pod(ns, "web-3", alpine.Ref(), false)); err != nil {
			t.Fatal(err)
		}
		// Wait until the operator has seen the Pod (it counts it), then
		// check nothing was scheduled for it.
		eventually(t, 60*time.Second, "new pod running with its imageID", func() error {
			p, err := shared.Cluster.Client.CoreV1().Pods(ns).Get(ctx, "web-3", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ImageID == "" {
				return errors.New("no imageID yet")
			}
			return nil
		})
		time.Sleep(3 * time.Second) // a reconcile takes well under this; see the Job watch below
		if n := len(jobs.snapshot()[alpine.Digest]); n != 1 {
			t.Errorf("want still one Job for alpine, got %d", n)
		}
		if after := natsRec.of(alpine.Digest); len(after) != before {
			t.Errorf("new events for a scanned digest: %s", kinds(after[before:]))
		}
	})
}

func lastStatus(es []seen) string {
	last := ""
	for _, e := range es {
		if e.Kind == "scan.status" {
			last = e.Status
		}
	}
	return last
}

// TestRescan covers scenario 4; it runs after TestScanLifecycle (same file,
// later), whose reports it ages and deletes.
func TestRescan(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 5*time.Minute)
	natsRec := subscribeNATS(t, shared.NATS.URL())

	t.Run("a report older than rescanInterval is rescanned", func(t *testing.T) {
		ns := "e2e-rescan"
		node := image(t, "node-app")
		first, err := getReport(ctx, node.Digest)
		if err != nil {
			t.Fatalf("TestScanLifecycle should have scanned node-app: %v", err)
		}
		if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
			t.Fatal(err)
		}
		// The CRD refuses a rescanInterval under 1h, so the report is aged
		// instead: scanned two hours ago as far as results-api knows. The
		// operator may hold the fresh answer for --lookup-cache-ttl (30s).
		ageReport(ctx, t, node.Digest, 2*time.Hour)
		time.Sleep(31 * time.Second)
		if err := shared.Client.Create(ctx, workload.Scanner(ns, 2, time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := shared.Client.Create(ctx, workload.Pod(ns, "frontend", node.Ref(), false)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "rescanned", func() error {
			es := natsRec.of(node.Digest)
			i := indexReason(es, "image.needed", "rescan")
			if i < 0 || index(es[i:], "report.stored") < 0 {
				return fmt.Errorf("events: %s", kinds(es))
			}
			return nil
		})
		second, err := getReport(ctx, node.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if !second.ScannedAt.After(first.ScannedAt) {
			t.Errorf("scannedAt %s not after %s", second.ScannedAt, first.ScannedAt)
		}
	})

	t.Run("deleting a report makes the operator rescan", func(t *testing.T) {
		debian := image(t, "debian")
		if _, err := getReport(ctx, debian.Digest); err != nil {
			t.Fatalf("TestScanLifecycle should have scanned debian: %v", err)
		}
		before := len(natsRec.of(debian.Digest))
		if err := deleteReport(ctx, debian.Digest); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "scanned again after the delete", func() error {
			es := natsRec.of(debian.Digest)[before:]
			if index(es, "report.deleted") < 0 || index(es, "image.needed") < 0 || index(es, "report.stored") < 0 {
				return fmt.Errorf("events after delete: %s", kinds(es))
			}
			_, err := getReport(ctx, debian.Digest)
			return err
		})
	})
}

func indexReason(es []seen, kind, reason string) int {
	for i, e := range es {
		if e.Kind == kind && e.Reason == reason {
			return i
		}
	}
	return -1
}

// ageReport moves a report's scan time back by d, in results-api's database.
func ageReport(ctx context.Context, t *testing.T, digest string, d time.Duration) {
	t.Helper()
	conn, err := pgx.Connect(ctx, shared.Postgres.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, "UPDATE reports SET scanned_at = scanned_at - make_interval(secs => $2) WHERE digest = $1", digest, d.Seconds())
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("age report %s: %v (%d rows)", digest, err, tag.RowsAffected())
	}
}
