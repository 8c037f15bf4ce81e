package e2echart

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/services"
)

// rematchAndNotify turns the notifier on through values (helm upgrade, a
// webhook receiver on the gateway, one route for findings a re-match
// makes), publishes a newer DB on the mirror, and checks that the
// matcher imports it, re-matches the stored Alpine report with its
// kubelet-mounted Pod-bound token (results-api accepts the rematch scope
// from it only), that crowsnest.findings.changed with the held-back
// advisories reaches a subscriber with the chart's reader credentials,
// and that the webhook gets exactly one notification for them.
func rematchAndNotify(ctx context.Context, t *testing.T, c kubernetes.Interface, w *workloads) {
	sink, err := services.StartSinkAt(net.JoinHostPort(cluster.HostIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sink.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(sink.Address(), "/"), "http://"))
	values := fmt.Sprintf(`notifier:
  enabled: true
  egressPorts: [%s]
  config:
    receivers:
      - name: e2e
        webhook: {url: %q}
    routes:
      - name: rematched
        receiver: e2e
        minSeverity: high
        kinds: [new]
        causes: [rematch]
        groupWait: 2s
`, port, sink.URL())
	file := filepath.Join(t.TempDir(), "notifier.yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := tool(ctx, t, "helm", "upgrade", release, filepath.Join(cluster.Options.Root, "helm", "crowsnest"), "-n", namespace, "--reuse-values", "-f", file); err != nil {
		t.Fatal(err)
	}
	if _, err := waitWorkloadsReady(ctx, c, namespace, 3*time.Minute); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logsOf(ctx, t, c, namespace))
	}
	t.Logf("helm upgrade with the notifier on: every workload Ready after %s", time.Since(start).Round(time.Second))

	events := subscribe(ctx, t, c, eventsv1.SubjectFindingsChanged, eventsv1.SubjectRematchDone)
	start = time.Now()
	if err := cluster.PublishNewerDB(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := events.wait(ctx, eventsv1.TypeFindingsChanged, w.alpine, 3*time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, logsOf(ctx, t, c, namespace))
	}
	var fc eventsv1.FindingsChanged
	if err := evs[0].Decode(&fc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range fc.New {
		ids = append(ids, f.ID)
	}
	t.Logf("findings.changed about %s after %s (reader, through the NATS Service): cause %s, DB %s, new %v", w.alpine, time.Since(start).Round(time.Second), fc.Cause, fc.DBBuilt, ids)
	if fc.Cause != eventsv1.CauseRematch || !slices.Contains(ids, stack.DemoAdvisories[0]) {
		t.Errorf("findings.changed %+v: want cause %s with new finding %s", fc, eventsv1.CauseRematch, stack.DemoAdvisories[0])
	}
	if len(evs) != 1 {
		t.Errorf("%d findings.changed about %s, want 1", len(evs), w.alpine)
	}

	// One notification, for the new findings: the route's group window is
	// 2s; a second one would come within it plus a delivery.
	deadline := time.Now().Add(time.Minute)
	for len(sink.Received()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
	}
	time.Sleep(10 * time.Second)
	got := sink.Received()
	if len(got) != 1 {
		t.Fatalf("the webhook got %d notifications, want exactly 1:\n%s\n%s", len(got), notifications(got), logsOf(ctx, t, c, namespace))
	}
	if !strings.Contains(string(got[0].Data), stack.DemoAdvisories[0]) || !strings.Contains(string(got[0].Data), w.alpine) {
		t.Errorf("the notification does not name %s in %s:\n%s", stack.DemoAdvisories[0], w.alpine, notifications(got))
	}
	t.Logf("the webhook got exactly 1 notification %s after the DB was published: %s", time.Since(start).Round(time.Second), firstLines(notifications(got), 1))
}

func notifications(ns []services.Notification) string {
	b, _ := json.Marshal(ns)
	return string(b)
}
