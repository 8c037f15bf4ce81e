package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// outageNS is where the outage scenarios scan; each uses fresh images.
const outageNS = "e2e-outage"

// heldScans pushes one new image per name, holds each digest's scan on the
// registry (Grype's pull of the image waits, as on a stalled registry), runs
// a Pod with it, and waits
// until every scan Job exists and its image.needed is in the stream. It
// returns the images and a release for all holds (also run at cleanup).
func heldScans(ctx context.Context, t *testing.T, natsRec *recorder, jobs *jobWatch, names ...string) ([]registry.Image, func()) {
	t.Helper()
	if err := workload.EnsureNamespace(ctx, shared.Client, outageNS); err != nil {
		t.Fatal(err)
	}
	if err := shared.Client.Create(ctx, workload.Scanner(outageNS, 10, 0)); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	var imgs []registry.Image
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	t.Cleanup(release)
	for _, name := range names {
		b, err := registry.Variant(name)
		if err != nil {
			t.Fatal(err)
		}
		img, err := shared.Registry.Push(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, shared.Registry.Hold(img.Digest))
		if err := shared.Client.Create(ctx, workload.Pod(outageNS, name, img.Ref(), false)); err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	eventually(t, 2*time.Minute, "scan Jobs created and announced", func() error {
		for _, img := range imgs {
			if len(jobs.snapshot()[img.Digest]) == 0 || count(natsRec.of(img.Digest), "image.needed") == 0 {
				return fmt.Errorf("%s: no Job or no image.needed yet", img.Digest)
			}
		}
		return nil
	})
	return imgs, release
}

// scanStatuses returns results-api's scan status (status, attempt) by digest.
func scanStatuses(ctx context.Context) (map[string]scanState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, shared.URL()+"/api/v1/scans?limit=1000", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/scans: %d %s", resp.StatusCode, b)
	}
	var list struct {
		Items []struct {
			Digest, Status, Reason string
			Attempt                int
		}
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, err
	}
	out := map[string]scanState{}
	for _, s := range list.Items {
		out[s.Digest] = scanState{status: s.Status, reason: s.Reason, attempt: s.Attempt}
	}
	return out, nil
}

type scanState struct {
	status, reason string
	attempt        int
}

// checkEveryJobDoneOnce: one job.done per Job ever created for the digest
// (a retried scan has one per attempt), image.needed first, the last
// job.done succeeded, one report.stored.
func checkEveryJobDoneOnce(es []seen, jobs int) error {
	if n := count(es, "job.done"); n != jobs {
		return fmt.Errorf("%d job.done for %d Jobs: %s", n, jobs, kinds(es))
	}
	if n := count(es, "image.needed"); n != jobs {
		return fmt.Errorf("%d image.needed for %d Jobs: %s", n, jobs, kinds(es))
	}
	if n := count(es, "report.stored"); n != 1 {
		return fmt.Errorf("%d report.stored: %s", n, kinds(es))
	}
	last := -1
	for i, e := range es {
		if e.Kind == "job.done" {
			last = i
		}
	}
	if es[last].Outcome != "succeeded" {
		return fmt.Errorf("the last job.done is %s: %s", es[last].Outcome, kinds(es))
	}
	return nil
}

// minPostgresOutage is past the 100 s after which results-api's consumer
// of earlier versions (MaxDeliver 20) dropped an event it could not apply:
// an outage this long lost events then, and must lose none now.
const minPostgresOutage = 110 * time.Second

// hasFailedJobDone reports whether a digest's events hold a failed job.done.
func hasFailedJobDone(es []seen) bool {
	for _, e := range es {
		if e.Kind == "job.done" && e.Outcome == string(eventsv1.OutcomeFailed) {
			return true
		}
	}
	return false
}

// TestPostgresOutage stops Postgres while three scans finish, until each
// scan's first Job has failed (and at least minPostgresOutage), while the
// operator publishes their job.done. Uploads fail meanwhile (the
// uploader retries, then its Job fails and the operator retries it with
// backoff); results-api redelivers the operator's events until it can
// write them. Afterwards: every Job's job.done is in the stream once, each
// digest has its report and one report.stored, and results-api's scan
// status of each is done, at the attempt of its last Job.
func TestPostgresOutage(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 15*time.Minute)
	natsRec := subscribeNATS(t, shared.NATS.URL())
	jobs := watchJobs(t, outageNS)
	imgs, release := heldScans(ctx, t, natsRec, jobs, "pg-outage-1", "pg-outage-2", "pg-outage-3")

	if err := shared.Postgres.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = shared.Postgres.Resume()
		}
	})
	pausedAt := time.Now()
	release()
	// The outage lasts until every scan's first Job has failed for want of
	// results-api (its uploader gave up), so that the retry path runs and
	// the job.done(failed) events meet a database that is down, and at
	// least minPostgresOutage. It was a fixed 3 minutes.
	eventually(t, 5*time.Minute, "every scan's first Job failed while Postgres is down", func() error {
		for _, img := range imgs {
			if !hasFailedJobDone(natsRec.of(img.Digest)) {
				return fmt.Errorf("%s: no job.done(failed) yet: %s", img.Digest, kinds(natsRec.of(img.Digest)))
			}
		}
		return nil
	})
	time.Sleep(time.Until(pausedAt.Add(minPostgresOutage)))
	during := 0
	for _, img := range imgs {
		during += count(natsRec.of(img.Digest), "job.done")
	}
	t.Logf("%d job.done published while Postgres was down (uploads failing, Jobs failing)", during)
	if err := shared.Postgres.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	t.Logf("Postgres back after %s", time.Since(pausedAt).Round(time.Second))

	recovered := time.Now()
	t.Cleanup(func() {
		if t.Failed() { // the events of each digest, to tell which one came late or twice
			for _, img := range imgs {
				t.Logf("%s: %d Jobs, events %s", img.Digest, len(jobs.snapshot()[img.Digest]), kinds(natsRec.of(img.Digest)))
			}
		}
	})
	eventually(t, 8*time.Minute, "every digest reported, every Job's job.done once, scan status done", func() error {
		statuses, err := scanStatuses(ctx)
		if err != nil {
			return err
		}
		for _, img := range imgs {
			if _, err := getReport(ctx, img.Digest); err != nil {
				return err
			}
			n := len(jobs.snapshot()[img.Digest])
			if err := checkEveryJobDoneOnce(natsRec.of(img.Digest), n); err != nil {
				return fmt.Errorf("%s: %w", img.Digest, err)
			}
			if st := statuses[img.Digest]; st.status != "done" || st.attempt != n {
				return fmt.Errorf("%s: scan status %+v, want done at attempt %d", img.Digest, st, n)
			}
		}
		return nil
	})
	for _, img := range imgs {
		t.Logf("%s: %d Jobs, events %s", img.Digest, len(jobs.snapshot()[img.Digest]), kinds(natsRec.of(img.Digest)))
	}
	t.Logf("recovered %s after Postgres returned", time.Since(recovered).Round(time.Second))
}

// TestNATSOutageLongerThanJobTTL stops NATS for longer than the scan Jobs'
// TTL (the stack's 2 minutes) while three scans upload and finish. Reports
// are stored meanwhile (results-api serves without NATS; its events wait
// in the outbox), the finished Jobs' TTL runs out while their job.done
// cannot be published, and their finalizer keeps them. Once NATS returns,
// the stream gets exactly one job.done and one report.stored per digest,
// every outbox drains to 0, and the Jobs go.
func TestNATSOutageLongerThanJobTTL(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 10*time.Minute)
	natsRec := subscribeNATS(t, shared.NATS.URL())
	jobs := watchJobs(t, outageNS)
	imgs, release := heldScans(ctx, t, natsRec, jobs, "nats-ttl-1", "nats-ttl-2", "nats-ttl-3")

	shared.NATS.Stop()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = shared.NATS.Start(context.Background())
		}
	})
	stoppedAt := time.Now()
	release()
	eventually(t, 2*time.Minute, "reports stored without NATS", func() error {
		for _, img := range imgs {
			if _, err := getReport(ctx, img.Digest); err != nil {
				return err
			}
		}
		return nil
	})
	// Past the TTL of Jobs that finished right after the release.
	eventually(t, shared.Options.JobTTL+time.Minute, "finished Jobs past their TTL, held by the finalizer", func() error {
		for _, img := range imgs {
			for _, name := range jobs.snapshot()[img.Digest] {
				j, err := shared.Cluster.Client.BatchV1().Jobs(outageNS).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("job %s: %w (the finalizer should keep it)", name, err)
				}
				if j.DeletionTimestamp == nil {
					return fmt.Errorf("job %s: TTL not run out yet", name)
				}
			}
		}
		return nil
	})
	// Every finished Job is past its TTL and kept by its finalizer: that
	// is the state this test is about; NATS returns now.
	if err := shared.NATS.Start(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	t.Logf("NATS back after %s", time.Since(stoppedAt).Round(time.Second))

	recovered := time.Now()
	eventually(t, 3*time.Minute, "every event delivered once, outboxes empty, Jobs gone", func() error {
		for _, img := range imgs {
			if err := checkNATSOnce(natsRec.of(img.Digest)); err != nil {
				return fmt.Errorf("%s: %w", img.Digest, err)
			}
			for _, name := range jobs.snapshot()[img.Digest] {
				if _, err := shared.Cluster.Client.BatchV1().Jobs(outageNS).Get(ctx, name, metav1.GetOptions{}); err == nil {
					return fmt.Errorf("job %s still there", name)
				}
			}
		}
		for _, api := range shared.APIs {
			depth, found, err := replicaMetric(ctx, api.URL(), "crowsnest_results_api_outbox_depth")
			if err != nil || !found || depth != 0 {
				return fmt.Errorf("%s: outbox depth %v (found %v): %w", api.URL(), depth, found, err)
			}
		}
		return nil
	})
	for _, img := range imgs {
		if n := len(jobs.snapshot()[img.Digest]); n != 1 {
			t.Errorf("%s: %d Jobs, want 1", img.Digest, n)
		}
	}
	t.Logf("recovered %s after NATS returned", time.Since(recovered).Round(time.Second))
}

// TestAPIKilledDuringUploadBurst sends 200 uploads (8 at a time, each
// retried on a cut connection or 5xx as the uploader does) while each
// results-api replica in turn is killed with SIGKILL and restarted. Every
// upload ends 201 or 200, every report is stored, and the stream holds
// exactly one report.stored per report: an upload retried after its first
// attempt was stored is the same report, with the same event id.
func TestAPIKilledDuringUploadBurst(t *testing.T) {
	needFull(t)
	ctx := withTimeout(t, 6*time.Minute)
	bom, err := os.ReadFile(filepath.Join(shared.Options.Root, "results-api", "testdata", "grype", "clean.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	natsRec := subscribeNATS(t, shared.NATS.URL())
	const burst, workers = 200, 8
	base := time.Now().UnixNano()
	digests := make([]string, burst)
	for i := range digests {
		digests[i] = fmt.Sprintf("sha256:%064x", base+int64(i))
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, d := range digests {
			_ = deleteReport(cctx, d)
		}
	})
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		fails []string
		done  int
	)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				code, err := upload(ctx, shared.URL(), digests[i], bom)
				mu.Lock()
				codes[code]++
				done++
				if code != http.StatusCreated && code != http.StatusOK {
					fails = append(fails, fmt.Sprintf("%s: %d %v", digests[i], code, err))
				}
				mu.Unlock()
			}
		})
	}
	progress := func() int {
		mu.Lock()
		defer mu.Unlock()
		return done
	}
	kills := 0
	go func() {
		defer close(next)
		for i := range burst {
			next <- i
			// Kill each replica once, a third and two thirds in.
			if i == burst/3 || i == 2*burst/3 {
				api := shared.APIs[kills%len(shared.APIs)]
				api.Kill()
				kills++
				if err := api.Start(ctx); err != nil {
					t.Errorf("restart %s: %v", api.URL(), err)
				}
			}
		}
	}()
	wg.Wait()
	if progress() != burst || len(fails) > 0 {
		t.Fatalf("%d of %d uploads answered; failures: %v", progress(), burst, fails)
	}
	eventually(t, time.Minute, "one report.stored per report", func() error {
		for _, d := range digests {
			if n := count(natsRec.of(d), "report.stored"); n != 1 {
				return fmt.Errorf("%s: %d report.stored", d, n)
			}
		}
		return nil
	})
	for _, d := range digests {
		if _, err := getReport(ctx, d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	t.Logf("%d uploads with %d replicas killed: status counts %v, %d report.stored", burst, kills, codes, burst)
}
