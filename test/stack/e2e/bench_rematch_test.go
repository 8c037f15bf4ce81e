package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/stack"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/registry"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// rematchBenchImages is the size of TestBenchRematchFleet
// (CROWSNEST_BENCH_REMATCH; make bench-rematch-e2e sets 1000).
var rematchBenchImages, _ = strconv.Atoi(os.Getenv("CROWSNEST_BENCH_REMATCH"))

// rematchBenchPerNS is how many of the fleet's Pods run in one namespace.
const rematchBenchPerNS = 100

// rematchFleetReport is the stored report of fleet image i: a real Grype
// report of the fixtures (the tiny DB's own output). One in five runs a
// package of DemoAdvisories (10 % Alpine 3.18 with OpenSSL, CVE-2024-5535;
// 10 % node_modules with minimist, CVE-2021-44906), half a clean Alpine
// base, the rest a Go binary; each has one npm package of its own, so that
// no two reports are the same document (a fleet shares its bases, not
// everything).
func rematchFleetReport(fixtures map[string]map[string]any, i int) (bom []byte, affected bool, err error) {
	name := "gobinary"
	switch {
	case i%10 == 0:
		name, affected = "alpine", true
	case i%10 == 5:
		name, affected = "node", true
	case i%2 == 1:
		name = "clean"
	}
	doc := map[string]any{}
	for k, v := range fixtures[name] {
		doc[k] = v
	}
	comps, _ := doc["components"].([]any)
	own := fmt.Sprintf("crowsnest-fleet-%05d", i)
	doc["components"] = append(append([]any(nil), comps...), map[string]any{
		"bom-ref": own, "type": "library", "name": own, "version": "1.0.0", "purl": "pkg:npm/" + own + "@1.0.0"})
	bom, err = json.Marshal(doc)
	return bom, affected, err
}

// TestBenchRematchFleet (issue 30): a vulnerability DB update reaching a
// fleet of running images, end to end on the local stack. N images run as
// Pods (kwok) in namespaces of 100 and have stored reports (uploaded, so no
// scan runs); the notifier knows them from the operator's inventory. Then
// two DB imports into the matcher:
//
//   - full: the offline DB without DemoAdvisories, a new build. Every
//     report is matched (none has a footprint yet); the affected fifth
//     loses the two advisories' findings.
//   - daily: the DB with them back. Reports whose recorded lookups meet no
//     changed row are skipped; the affected fifth gains a critical each,
//     which must reach findings.changed and the notifier's webhook for
//     every one of them, and no other report may change.
//
// It prints (and writes to CROWSNEST_BENCH_OUT) the times from each import
// to rematch.done, to the last findings.changed and to the last webhook.
// Only with CROWSNEST_BENCH_REMATCH=N (make bench-rematch-e2e): the imports
// re-match every report the other e2e tests stored.
func TestBenchRematchFleet(t *testing.T) {
	if rematchBenchImages <= 0 {
		t.Skip("a benchmark: make bench-rematch-e2e (CROWSNEST_BENCH_REMATCH=<images>)")
	}
	needFull(t)
	if shared.Matcher == nil || shared.Notifications == nil {
		t.Fatal("the stack runs no matcher or no notifier")
	}
	n := rematchBenchImages
	ctx := withTimeout(t, 60*time.Minute)
	fixtures := map[string]map[string]any{}
	for _, name := range []string{"alpine", "node", "clean", "gobinary"} {
		raw, err := os.ReadFile(filepath.Join(shared.Options.Root, "results-api", "testdata", "grype", name+".cdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		doc := map[string]any{}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		fixtures[name] = doc
	}

	// Images, reports, then Pods: the operator finds every digest known.
	setup := time.Now()
	imgs := make([]registry.Image, n)
	affected := map[string]bool{}
	nsOf := map[string]string{}
	boms := make([][]byte, n)
	for i := range n {
		b, err := registry.Variant(fmt.Sprintf("fleet-%05d", i))
		if err != nil {
			t.Fatal(err)
		}
		if imgs[i], err = shared.Registry.Push(ctx, b); err != nil {
			t.Fatal(err)
		}
		var hit bool
		if boms[i], hit, err = rematchFleetReport(fixtures, i); err != nil {
			t.Fatal(err)
		}
		if hit {
			affected[imgs[i].Digest] = true
		}
		nsOf[imgs[i].Digest] = fmt.Sprintf("bench-fleet-%d", i/rematchBenchPerNS)
	}
	parallel(t, n, 8, func(i int) error {
		code, err := upload(ctx, shared.URL(), imgs[i].Digest, boms[i])
		if err != nil {
			return fmt.Errorf("upload %s: %w", imgs[i].Digest, err)
		}
		if code != http.StatusCreated && code != http.StatusOK {
			return fmt.Errorf("upload %s: status %d", imgs[i].Digest, code)
		}
		return nil
	})
	inv := subscribeInventory(t)
	cfg := rest.CopyConfig(shared.Cluster.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := (n + rematchBenchPerNS - 1) / rematchBenchPerNS
	for k := range namespaces {
		ns := fmt.Sprintf("bench-fleet-%d", k)
		if err := workload.EnsureNamespace(ctx, shared.Client, ns); err != nil {
			t.Fatal(err)
		}
		if err := shared.Client.Create(ctx, workload.Scanner(ns, 1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	parallel(t, n, 16, func(i int) error {
		p := workload.Pod(nsOf[imgs[i].Digest], fmt.Sprintf("app-%05d", i), imgs[i].Ref(), false)
		_, err := kc.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
	eventually(t, 15*time.Minute, "every fleet digest in its namespace's inventory snapshot", func() error {
		missing := 0
		for _, img := range imgs {
			if !inv.has(nsOf[img.Digest], img.Digest) {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d digests not in an inventory snapshot yet", missing, n)
		}
		return nil
	})
	t.Logf("%d images running with stored reports (%d affected by %v) after %s", n, len(affected), stack.DemoAdvisories, time.Since(setup).Round(time.Second))

	changes := subscribeFindingsChanged(t)
	done := subscribeRematchDone(t)
	type pass struct {
		name                   string
		done                   eventsv1.RematchDone
		toDone, toLastChanged  time.Duration
		toLastNotified         time.Duration
		changedFleet, notified int
		skipped                float64
	}
	notifiedAbout := func(digests map[string]bool, from int) map[string]bool {
		out := map[string]bool{}
		for _, m := range shared.Notifications.Received()[from:] {
			var d notification
			if err := json.Unmarshal(m.Data, &d); err != nil {
				t.Fatalf("notification %s: %v", m.ID, err)
			}
			for _, it := range d.Items {
				if digests[it.Digest] {
					out[it.Digest] = true
				}
			}
		}
		return out
	}
	changedSince := func(at time.Time) map[string]time.Time {
		changes.mu.Lock()
		defer changes.mu.Unlock()
		out := map[string]time.Time{}
		for _, e := range changes.events {
			if nsOf[e.Digest] != "" && e.At.After(at) {
				out[e.Digest] = e.At
			}
		}
		return out
	}
	run := func(name string, exclude []string, wantChanged map[string]bool, notify bool) pass {
		p := pass{name: name}
		skipped0 := matcherMetric(ctx, t, "crowsnest_rematch_skipped_reports_total")
		notes0 := len(shared.Notifications.Received())
		start := time.Now()
		if err := shared.ImportDB(ctx, exclude); err != nil {
			t.Fatal(err)
		}
		select {
		case p.done = <-done:
			p.toDone = time.Since(start)
		case <-ctx.Done():
			t.Fatalf("%s: no rematch.done", name)
		}
		p.skipped = matcherMetric(ctx, t, "crowsnest_rematch_skipped_reports_total") - skipped0
		// findings.changed is published from results-api's outbox after the
		// upload: wait for every expected one, then a little for any other.
		eventually(t, 5*time.Minute, name+": findings.changed of every affected image", func() error {
			got := changedSince(start)
			for d := range wantChanged {
				if got[d].IsZero() {
					return fmt.Errorf("%d of %d affected images without findings.changed", len(wantChanged)-len(got), len(wantChanged))
				}
			}
			return nil
		})
		var last time.Time
		for _, at := range changedSince(start) {
			if at.After(last) {
				last = at
			}
		}
		p.toLastChanged = last.Sub(start)
		if notify {
			eventually(t, 5*time.Minute, name+": a webhook about every affected image", func() error {
				if got := notifiedAbout(wantChanged, notes0); len(got) < len(wantChanged) {
					return fmt.Errorf("%d of %d affected images notified", len(got), len(wantChanged))
				}
				return nil
			})
			p.toLastNotified = time.Since(start)
			p.notified = len(notifiedAbout(wantChanged, notes0))
		}
		time.Sleep(5 * time.Second) // a late findings.changed of an unaffected image would show here
		got := changedSince(start)
		p.changedFleet = len(got)
		for d := range got {
			if !wantChanged[d] {
				t.Errorf("%s: findings.changed for %s, which runs none of %v", name, d, stack.DemoAdvisories)
			}
		}
		if p.done.ReportsFailed != 0 {
			t.Errorf("%s: rematch.done %+v: reports failed", name, p.done)
		}
		t.Logf("%s: rematch.done %+v after %s; %d skipped; last findings.changed after %s; last webhook after %s",
			name, p.done, p.toDone.Round(time.Millisecond), int(p.skipped), p.toLastChanged.Round(time.Millisecond), p.toLastNotified.Round(time.Millisecond))
		return p
	}
	full := run("full", stack.DemoAdvisories, affected, false)
	daily := run("daily", nil, affected, true)

	var b strings.Builder
	fmt.Fprintf(&b, "| %d running images (%d namespaces), %d affected | full pass (new build, no footprints) | daily pass (%v back) |\n|---|---|---|\n",
		n, namespaces, len(affected), stack.DemoAdvisories)
	row := func(what string, f func(pass) string) { fmt.Fprintf(&b, "| %s | %s | %s |\n", what, f(full), f(daily)) }
	row("reports re-matched (rematch.done: total / changed / unchanged / failed)", func(p pass) string {
		return fmt.Sprintf("%d / %d / %d / %d", p.done.ReportsTotal, p.done.ReportsChanged, p.done.ReportsUnchanged, p.done.ReportsFailed)
	})
	row("skipped by the DB diff", func(p pass) string { return strconv.Itoa(int(p.skipped)) })
	row("import → rematch.done", func(p pass) string { return p.toDone.Round(100 * time.Millisecond).String() })
	row("reports/s (total / import → rematch.done)", func(p pass) string {
		return fmt.Sprintf("%.1f", float64(p.done.ReportsTotal)/p.toDone.Seconds())
	})
	row("fleet images with findings.changed (want: the affected)", func(p pass) string { return strconv.Itoa(p.changedFleet) })
	row("import → last findings.changed of an affected image", func(p pass) string { return p.toLastChanged.Round(100 * time.Millisecond).String() })
	row("import → webhook about every affected image", func(p pass) string {
		if p.notified == 0 {
			return "– (resolved findings are not notified)"
		}
		return fmt.Sprintf("%s (%d images)", p.toLastNotified.Round(100*time.Millisecond), p.notified)
	})
	fmt.Println(b.String())
	if out := os.Getenv("CROWSNEST_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines and fails the test with the
// first errors.
func parallel(t *testing.T, n, workers int, f func(int) error) {
	t.Helper()
	next := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		sort.Strings(errs)
		t.Fatalf("%d of %d failed, first: %s", len(errs), n, errs[0])
	}
}

// inventory keeps each namespace's latest inventory snapshot's digests.
type inventory struct {
	mu sync.Mutex
	ns map[string]map[string]bool
}

func (v *inventory) has(ns, digest string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ns[ns][digest]
}

// subscribeInventory reads crowsnest.inventory.snapshot from the stream's
// start with the reader user, as the notifier does.
func subscribeInventory(t *testing.T) *inventory {
	t.Helper()
	v := &inventory{ns: map[string]map[string]bool{}}
	consumeStream(t, shared.NATS.URL(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{eventsv1.SubjectInventorySnapshot}}, func(m jetstream.Msg) {
		s, _, ok := payload[eventsv1.InventorySnapshot](t, m)
		if !ok {
			return
		}
		set := map[string]bool{}
		for _, d := range s.Digests() {
			set[d] = true
		}
		v.mu.Lock()
		v.ns[s.Namespace] = set
		v.mu.Unlock()
	})
	return v
}

// subscribeFindingsChanged records the findings.changed events published
// from now on (their digest and arrival), only those with cause rematch.
func subscribeFindingsChanged(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	consumeStream(t, shared.NATS.URL(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{eventsv1.SubjectFindingsChanged}, DeliverPolicy: jetstream.DeliverNewPolicy}, func(m jetstream.Msg) {
		p, id, ok := payload[eventsv1.FindingsChanged](t, m)
		if !ok {
			return
		}
		if p.Cause != eventsv1.CauseRematch {
			t.Errorf("findings.changed of %s with cause %q during a re-match benchmark", p.Digest, p.Cause)
			return
		}
		r.add(seen{Kind: "findings.changed", ID: id, Digest: p.Digest, At: time.Now()})
	})
	return r
}
