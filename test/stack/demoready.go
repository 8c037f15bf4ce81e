package stack

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/workload"
)

// WaitDemoScanned waits until results-api holds a report for every image a
// demo Pod without the ignore label runs and the registry has (the others
// are not scanned, or fail by design) and returns how many it saw stored and how many it waited for.
// It polls every 500 ms, reading as the admin service account when reads
// need a token, and stops at ctx's end with what it has.
func (s *Stack) WaitDemoScanned(ctx context.Context) (stored, want int, err error) {
	scanned := map[string]bool{}
	for _, p := range workload.DemoPods {
		if !p.Ignored {
			scanned[p.Image] = true
		}
	}
	var digests []string
	for _, img := range s.Registry.Images {
		if img.Pushed && scanned[img.Name] {
			digests = append(digests, img.Digest)
		}
	}
	token := ""
	if s.Options.ReadAuth == "kubernetes" {
		if token, err = s.ReadToken(ctx, MatcherNamespace, AdminServiceAccount); err != nil {
			return 0, len(digests), err
		}
	}
	done := map[string]bool{}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, d := range digests {
			if !done[d] && s.reportStored(ctx, d, token) {
				done[d] = true
			}
		}
		if len(done) == len(digests) {
			return len(done), len(digests), nil
		}
		select {
		case <-ctx.Done():
			return len(done), len(digests), ctx.Err()
		case <-tick.C:
		}
	}
}

// reportStored tells whether results-api answers 200 for digest's report.
func (s *Stack) reportStored(ctx context.Context, digest, token string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/api/v1/reports/"+digest, nil)
	if err != nil {
		return false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// DemoReadyLine is what the demo prints once its images are scanned.
func DemoReadyLine(stored, want int, after time.Duration, err error) string {
	if err != nil {
		return fmt.Sprintf("demo: %d of %d scannable images stored after %s, then stopped waiting: %v", stored, want, after.Round(100*time.Millisecond), err)
	}
	return fmt.Sprintf("demo: all %d scannable images scanned and stored, %s after the stack was up", want, after.Round(100*time.Millisecond))
}
