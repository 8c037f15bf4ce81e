package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// TestOperatorKilledMidWave starts Pods running 40 new digests at once and
// kills the operator (SIGKILL) while it is creating their scan Jobs, then
// starts it again. Afterwards every digest has a report, exactly one scan
// Job was ever created for it (Job names are derived from the digest, and
// a restarted operator adopts what it finds), and the stream holds exactly
// one image.needed, one job.done and one report.stored for it (event ids
// are derived from the Job, and JetStream drops a re-publish by Msg-Id).
func TestOperatorKilledMidWave(t *testing.T) {
	needFull(t)
	// 40 digests at 10 scans at a time: the kill below lands with Jobs
	// running, finished and not yet created, as it did with 100 when the
	// scans were host processes; on the real node each scan is a Pod
	// (about 5 s of CPU), and 100 took 9 minutes of the suite.
	const ns, wave = "e2e-wave", 40
	ctx := withTimeout(t, 12*time.Minute)
	natsRec := subscribeNATS(t, shared.NATS.URL())
	jobs := watchJobs(t, ns)
	if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(ns, 10, 0)); err != nil {
		t.Fatal(err)
	}
	imgs := make([]registry.Image, wave)
	var wg sync.WaitGroup
	errs := make(chan error, wave)
	for i := range wave {
		wg.Go(func() {
			b, err := registry.Variant(fmt.Sprintf("wave-%03d", i))
			if err == nil {
				imgs[i], err = shared.Registry.Push(ctx, b)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, img := range imgs {
		if err := shared.Client.Create(ctx, workload.Pod(ns, fmt.Sprintf("wave-%03d", i), img.Ref(), false)); err != nil {
			t.Fatal(err)
		}
	}

	// Kill the operator once a third of the wave has Jobs: mid-creation,
	// with Jobs running, finishing and waiting to be created.
	eventually(t, 3*time.Minute, "a third of the wave scheduled", func() error {
		if n := len(jobs.snapshot()); n < wave/3 {
			return fmt.Errorf("%d digests have Jobs", n)
		}
		return nil
	})
	killedAt := len(jobs.snapshot())
	shared.Operator.Kill()
	if err := shared.Operator.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("operator killed with %d of %d digests scheduled", killedAt, wave)

	start := time.Now()
	// On the real node a Job's job.done follows its report by the time the
	// kubelet, the Job controller and the operator take to see the Pod end:
	// wait for both, not for the report alone.
	eventually(t, 10*time.Minute, "every digest of the wave scanned and its Job done", func() error {
		missing := 0
		for _, img := range imgs {
			es := natsRec.of(img.Digest)
			if count(es, "report.stored") == 0 || count(es, "job.done") == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d digests without report.stored or job.done", missing, wave)
		}
		return nil
	})
	t.Logf("wave done %s after the restart", time.Since(start).Round(time.Second))
	// Late duplicates would arrive within moments: give them the chance.
	time.Sleep(3 * time.Second)
	snap := jobs.snapshot()
	var dupJobs, badEvents int
	for _, img := range imgs {
		if n := len(snap[img.Digest]); n != 1 {
			dupJobs++
			t.Errorf("%s: %d Jobs created (%v), want 1; their states: %s", img.Digest, n, snap[img.Digest], jobStates(ctx, ns, snap[img.Digest]))
		}
		if err := checkNATSOnce(natsRec.of(img.Digest)); err != nil {
			badEvents++
			t.Errorf("%s: %v", img.Digest, err)
		}
		if _, err := getReport(ctx, img.Digest); err != nil {
			t.Errorf("%s: %v", img.Digest, err)
		}
	}
	t.Logf("%d digests: %d with other than one Job, %d with other than one image.needed/job.done/report.stored", wave, dupJobs, badEvents)
}

// jobStates says how each named Job ended (its conditions, or that it is
// gone), so a second Job for a digest tells a retry after a failed scan
// from a duplicate.
func jobStates(ctx context.Context, ns string, names []string) string {
	var b strings.Builder
	for _, name := range names {
		j, err := shared.Cluster.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(&b, "[%s: %v] ", name, err)
			continue
		}
		fmt.Fprintf(&b, "[%s: created %s, failed pods %d", name, j.CreationTimestamp.Format(time.RFC3339), j.Status.Failed)
		for _, c := range j.Status.Conditions {
			fmt.Fprintf(&b, ", %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString("] ")
	}
	return b.String()
}
