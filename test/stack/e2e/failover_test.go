package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReplicaFailover runs against the stack's two results-api replicas
// behind one front (a Service's stand-in). A report written on either
// replica reaches the WebSocket clients of both (each replica fans out
// from NATS, not only its own writes). With one replica killed (SIGKILL),
// every upload through the front is stored, the surviving replica's
// WebSocket client sees each exactly once, and the stream holds exactly one
// report.stored per report; the killed replica, restarted, serves again.
func TestReplicaFailover(t *testing.T) {
	needFull(t)
	if len(shared.APIs) < 2 {
		t.Fatalf("the stack runs %d results-api replicas; this test needs 2", len(shared.APIs))
	}
	ctx := withTimeout(t, 4*time.Minute)
	bom, err := os.ReadFile(filepath.Join(shared.Options.Root, "results-api", "testdata", "grype", "clean.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	first, second := shared.APIs[0], shared.APIs[1]
	natsRec := subscribeNATS(t, shared.NATS.URL())
	ws0, ws1 := subscribeWS(t, first.URL()), subscribeWS(t, second.URL())
	base := time.Now().UnixNano()
	var digests []string
	digest := func(i int) string {
		d := fmt.Sprintf("sha256:%064x", base+int64(i))
		digests = append(digests, d)
		return d
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, d := range digests {
			_ = deleteReport(cctx, d)
		}
	})
	storedOnce := func(what string, r *recorder, ds ...string) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			for _, d := range ds {
				if n := count(r.of(d), "report.stored"); n != 1 {
					return fmt.Errorf("%d report.stored for %s, want 1 (%s)", n, d, kinds(r.of(d)))
				}
			}
			return nil
		})
	}

	// A write on either replica reaches both replicas' clients.
	d0, d1 := digest(0), digest(1)
	if code, err := upload(ctx, first.URL(), d0, bom); code != http.StatusCreated {
		t.Fatalf("PUT on the first replica: %d %v", code, err)
	}
	if code, err := upload(ctx, second.URL(), d1, bom); code != http.StatusCreated {
		t.Fatalf("PUT on the second replica: %d %v", code, err)
	}
	storedOnce("the first replica's client sees both writes", ws0, d0, d1)
	storedOnce("the second replica's client sees both writes", ws1, d0, d1)

	// One replica crashes; the front sends everything to the other.
	first.Kill()
	restarted := false
	t.Cleanup(func() { // the suite goes on with both replicas
		if !restarted {
			if err := first.Start(context.Background()); err != nil {
				t.Errorf("restart the killed replica: %v", err)
			}
		}
	})
	const burst = 20
	var after []string
	for i := range burst {
		d := digest(2 + i)
		after = append(after, d)
		if code, err := upload(ctx, shared.URL(), d, bom); code != http.StatusCreated {
			t.Fatalf("upload %d through the front with one replica down: %d %v", i, code, err)
		}
	}
	storedOnce("the surviving replica's client sees every upload once", ws1, after...)
	storedOnce("the stream holds one report.stored per report", natsRec, append([]string{d0, d1}, after...)...)

	// Back again: the restarted replica serves and fans out.
	restarted = true
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ws0b := subscribeWS(t, first.URL())
	d := digest(2 + burst)
	if code, err := upload(ctx, second.URL(), d, bom); code != http.StatusCreated {
		t.Fatalf("PUT after the restart: %d %v", code, err)
	}
	storedOnce("the restarted replica's new client sees a write on the other", ws0b, d)
	for _, dd := range append([]string{d0, d1, d}, after...) {
		if _, err := getReport(ctx, dd); err != nil {
			t.Errorf("report %s: %v", dd, err)
		}
	}
}

// upload PUTs bom for digest on base with the admin token, retrying (up to
// 5 times) a request cut by a dying server, as the uploader does. It
// returns the last status.
func upload(ctx context.Context, base, digest string, bom []byte) (int, error) {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		var req *http.Request
		req, err = http.NewRequestWithContext(ctx, http.MethodPut, base+"/api/v1/reports/"+digest, bytes.NewReader(bom))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
		req.Header.Set("Authorization", "Bearer "+shared.AdminToken())
		var resp *http.Response
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			err = fmt.Errorf("status %d", resp.StatusCode)
			continue
		}
		return resp.StatusCode, nil
	}
	return 0, err
}
