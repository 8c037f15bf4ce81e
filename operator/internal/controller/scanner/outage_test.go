package scanner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

func TestResultsAPIDownCreatesNoJobs(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	api.Close() // down before the operator ever asks
	runPod(t, ns, "web", nil, "nginx@"+testDigest(11), "redis@"+testDigest(12))
	newScanner(t, ns)
	startOperator(t, ns, api.URL, "", testOptions())

	// A results-api outage passes by itself: Ready=False and Reconciling
	// (retried), never Stalled, which would tell Flux or Argo CD to give up.
	eventually(t, 10*time.Second, "Ready=False ResultsAPIUnavailable, retried, not stalled", conditions(t, ns,
		"Ready=False/ResultsAPIUnavailable", "Reconciling=True/ResultsAPIUnavailable", "ScansComplete=Unknown/ResultsAPIUnavailable", "Stalled="))
	consistently(t, 2*time.Second, "no jobs while results-api is down, never stalled", func() error {
		if err := jobCount(t, ns, 0)(); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(getScanner(t, ns).Status.Conditions, crowsnestv1alpha1.ConditionStalled); c != nil {
			return fmt.Errorf("Stalled = %+v", c)
		}
		return nil
	})

	api.Restart()
	eventually(t, 15*time.Second, "jobs once results-api is back", jobCount(t, ns, 2))
	eventually(t, 10*time.Second, "Ready again, scans in progress", conditions(t, ns, scanningOK...))
}

func TestNATSDownThenOperatorRestartDeliversEachEventOnce(t *testing.T) {
	ns := newNamespace(t)
	api := resultsapitest.Start(t)
	nats, natsURL := natstest.StartT(t)
	nats.Stop() // down from the start
	runPod(t, ns, "web", nil, "nginx@"+testDigest(21), "redis@"+testDigest(22))
	newScanner(t, ns)
	op := startOperator(t, ns, api.URL, natsURL, testOptions())

	// Scanning goes on without NATS; the condition says events are not delivered.
	eventually(t, 20*time.Second, "jobs with NATS down", jobCount(t, ns, 2))
	eventually(t, 10*time.Second, "Ready says events are undelivered", conditions(t, ns,
		"Ready=False/EventsUndelivered", "Reconciling=True/EventsUndelivered", "ScansComplete=False/Scanning", "Stalled="))

	if err := nats.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "image.needed delivered after NATS returns", func() error {
		if n := countType(streamEvents(t, natsURL), eventsv1.TypeImageNeeded); n != 2 {
			return fmt.Errorf("%d image.needed", n)
		}
		return conditions(t, ns, scanningOK...)()
	})

	// Stop the operator; while it is away one scan finishes, and the other
	// Job forgets that its image.needed was delivered, as if the operator had
	// crashed between publishing and recording it.
	stopStart := time.Now()
	op.stop()
	t.Logf("operator stopped in %v", time.Since(stopStart))
	jobs := scanJobs(t, ns)
	putReport(t, api, jobs[0].Annotations[scanjob.AnnotationDigest])
	finishJob(t, &jobs[0], true, nil, nil)
	forget := jobs[1].DeepCopy()
	delete(forget.Annotations, scanjob.AnnotationPublished)
	if err := k8s.Patch(context.Background(), forget, client.MergeFrom(&jobs[1])); err != nil {
		t.Fatal(err)
	}

	startOperator(t, ns, api.URL, natsURL, testOptions())
	eventually(t, 20*time.Second, "job.done after the restart", func() error {
		if n := countType(streamEvents(t, natsURL), eventsv1.TypeJobDone); n != 1 {
			return fmt.Errorf("%d job.done", n)
		}
		if len(scanJobs(t, ns)) != 1 {
			return fmt.Errorf("the finished job is not retired")
		}
		return nil
	})
	eventually(t, 10*time.Second, "the republished image.needed is recorded", func() error {
		j := scanJobs(t, ns)[0]
		if j.Annotations[scanjob.AnnotationPublished] != "needed" {
			return fmt.Errorf("annotations %v", j.Annotations)
		}
		return nil
	})
	evs := streamEvents(t, natsURL)
	ids := map[string]int{}
	for _, ev := range evs {
		ids[ev.ID]++
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	if len(evs) != 3 || evs[len(evs)-1].Type != eventsv1.TypeJobDone {
		t.Errorf("stream: %d events, want image.needed ×2 then job.done", len(evs))
	}
}
