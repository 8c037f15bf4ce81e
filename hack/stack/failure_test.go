package stack_test

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crowsnest-dev/crowsnest/hack/stack/internal/workload"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// TestUnpullableImageFailsAndRetries (scenario 3, first part): a Pod whose
// image the registry does not have → Grype fails to pull it → job.done
// with reason ImagePullFailed → the Scanner shows the failure → the
// operator retries after its backoff.
func TestUnpullableImageFailsAndRetries(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 4*time.Minute)
	ns := "e2e-fail"
	natsRec := subscribeNATS(t, shared.NATS.URL())
	wsRec := subscribeWS(t, shared.API.URL())
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 2, 0)); err != nil {
		t.Fatal(err)
	}
	private := image(t, "private")
	if private.Pushed {
		t.Fatal("the private demo image must not be in the registry")
	}
	if err := shared.Client.Create(ctx, workload.Pod(ns, "payments", private.Ref(), false)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "failed scan reported and retried", func() error {
		es := natsRec.of(private.Digest)
		var done, retry *seen
		for i := range es {
			switch {
			case es[i].Kind == "job.done" && done == nil:
				done = &es[i]
			case es[i].Kind == "image.needed" && done != nil && es[i].Reason == "retry":
				retry = &es[i]
			}
		}
		if done == nil || retry == nil {
			return fmt.Errorf("events so far: %s", kinds(es))
		}
		if done.Outcome != "failed" || done.Reason != crowsnestv1alpha1.FailureImagePull {
			return fmt.Errorf("job.done outcome %q reason %q, want failed/%s", done.Outcome, done.Reason, crowsnestv1alpha1.FailureImagePull)
		}
		if gap := retry.At.Sub(done.At); gap < shared.Options.RetryBackoff/2 {
			return fmt.Errorf("retried %s after the failure, want about the %s backoff", gap, shared.Options.RetryBackoff)
		}
		return nil
	})
	var s crowsnestv1alpha1.Scanner
	if err := shared.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: workload.ScannerName}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Status.RecentFailures) == 0 || s.Status.RecentFailures[0].Reason != crowsnestv1alpha1.FailureImagePull {
		t.Errorf("scanner status does not show the pull failure: %+v", s.Status)
	}
	eventually(t, 30*time.Second, "WebSocket shows the failure", func() error {
		for _, e := range wsRec.of(private.Digest) {
			if e.Kind == "scan.status" && e.Status == "failed" {
				return nil
			}
		}
		return fmt.Errorf("websocket events: %s", kinds(wsRec.of(private.Digest)))
	})
}
