package e2e

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
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
	wsRec := subscribeWS(t, shared.URL())
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
	eventually(t, 2*time.Minute, "failed scan reported", func() error {
		es := natsRec.of(private.Digest)
		i := index(es, "job.done")
		if i < 0 {
			return fmt.Errorf("events so far: %s", kinds(es))
		}
		if es[i].Outcome != "failed" || es[i].Reason != crowsnestv1alpha1.FailureImagePull {
			return fmt.Errorf("job.done outcome %q reason %q, want failed/%s", es[i].Outcome, es[i].Reason, crowsnestv1alpha1.FailureImagePull)
		}
		return nil
	})
	// The failure shows in the Scanner's status until the retry starts
	// (the retry backoff is 5s here).
	eventually(t, 10*time.Second, "scanner status shows the pull failure", func() error {
		var s crowsnestv1alpha1.Scanner
		if err := shared.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: workload.ScannerName}, &s); err != nil {
			return err
		}
		for _, f := range s.Status.RecentFailures {
			if f.Digest == private.Digest && f.Reason == crowsnestv1alpha1.FailureImagePull {
				return nil
			}
		}
		return fmt.Errorf("status: %+v", s.Status)
	})
	eventually(t, 2*time.Minute, "retried after the backoff", func() error {
		es := natsRec.of(private.Digest)
		done := index(es, "job.done")
		retry := indexReason(es, "image.needed", "retry")
		if retry < done {
			return fmt.Errorf("events so far: %s", kinds(es))
		}
		if gap := es[retry].At.Sub(es[done].At); gap < shared.Options.RetryBackoff/2 {
			return fmt.Errorf("retried %s after the failure, want about the %s backoff", gap, shared.Options.RetryBackoff)
		}
		return nil
	})
	eventually(t, 30*time.Second, "WebSocket shows the failure", func() error {
		for _, e := range wsRec.of(private.Digest) {
			if e.Kind == "scan.status" && e.Status == "failed" {
				return nil
			}
		}
		return fmt.Errorf("websocket events: %s", kinds(wsRec.of(private.Digest)))
	})
}
