package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chromiumDOM loads url in headless Chromium (Debian's, as the web tests
// use), lets its scripts run, and returns the rendered DOM.
func chromiumDOM(ctx context.Context, url string) (string, error) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("chromium not installed (hack/deps.sh chromium): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--headless", "--no-sandbox", "--disable-gpu",
		"--virtual-time-budget=10000", "--dump-dom", url).Output()
	if err != nil {
		return "", fmt.Errorf("chromium --dump-dom %s: %w", url, err)
	}
	return string(out), nil
}

// dashboardShows waits until the dashboard's images table, rendered by a
// real browser, names every repository in repos. (Not the overview: its
// top-10 list depends on every other test's images.)
func dashboardShows(t *testing.T, ctx context.Context, repos []string) {
	t.Helper()
	eventually(t, 90*time.Second, "dashboard lists the scanned images", func() error {
		dom, err := chromiumDOM(ctx, shared.URL()+"/images")
		if err != nil {
			return err
		}
		for _, r := range repos {
			if !strings.Contains(dom, r) {
				return fmt.Errorf("dashboard does not show %s", r)
			}
		}
		return nil
	})
}
