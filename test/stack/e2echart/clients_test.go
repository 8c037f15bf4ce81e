package e2echart

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/test/stack"
)

// dashboardAndPlugin reads the installed chart the two ways its users do.
//
// The dashboard: kubectl port-forward to the results-api Service, a token
// from `kubectl create token` (the command the sign-in panel prints), and
// Debian's Chromium (web/e2e/signin-cli.mjs) signing in and seeing both
// workloads' images.
//
// kubectl crowsnest: through the API server's service proxy the request
// now travels the whole way (API server → Service → results-api's Pod on
// the real node) and results-api refuses it for want of credentials — the
// identity limit: the proxy drops the caller's Authorization header, so
// results-api cannot tell who asks — and the plugin says so and what to do
// instead; a caller without services/proxy is refused by the API server;
// the way the plugin's message points to (--server through a port-forward,
// with the same token) lists both images.
func dashboardAndPlugin(ctx context.Context, t *testing.T, _ kubernetes.Interface, w *workloads) {
	token, err := tool(ctx, t, "kubectl", "create", "token", "e2e-reader", "-n", namespace, "--audience", stack.TokenAudience, "--duration", "1h")
	if err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(token)
	base := "http://" + portForward(ctx, t, namespace, "svc/"+release+"-results-api:80")

	t.Run("dashboard in Chromium", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, "node", "e2e/signin-cli.mjs", base, stack.TokenAudience, w.pause, w.alpine)
		cmd.Dir = filepath.Join(cluster.Options.Root, "web")
		cmd.Stdin = strings.NewReader(token)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("signing in to the dashboard in Chromium: %v\n%s%s", err, out, stderr.String())
		}
		var seen struct {
			User    string   `json:"user"`
			Digests []string `json:"digests"`
		}
		if err := json.Unmarshal(out, &seen); err != nil {
			t.Fatalf("signin-cli.mjs printed %q: %v", out, err)
		}
		if !strings.Contains(seen.User, "e2e-reader") {
			t.Errorf("the dashboard's signed-in user is %q, want the e2e-reader ServiceAccount", seen.User)
		}
		t.Logf("Chromium signed in as %q through the port-forward and sees %d images", seen.User, len(seen.Digests))
	})

	t.Run("kubectl crowsnest through the service proxy", func(t *testing.T) {
		out, err := tool(ctx, t, "kubectl-crowsnest", "images", "-n", scanned)
		if err == nil {
			t.Fatalf("kubectl crowsnest images through the service proxy succeeded, want results-api's 401 (the proxy drops credentials):\n%s", out)
		}
		if msg := err.Error(); !strings.Contains(msg, "results-api refused the request without credentials (401") {
			t.Fatalf("through the service proxy: want results-api's own 401 (the request reached its Pod), got:\n%s", msg)
		}
		_, err = tool(ctx, t, "kubectl-crowsnest", "images", "-n", scanned, "--as", "system:serviceaccount:"+scanned+":default")
		if err == nil || !strings.Contains(err.Error(), "the API server refused to proxy") {
			t.Fatalf("a caller without services/proxy: want the API server's 403 explained, got %v", err)
		}
	})

	// images -n lists what the namespace runs: results-api learns that from
	// the operator's inventory, published over NATS a debounce after the
	// Pods change — and later when NATS came up after the operator (the
	// reports can be stored first). Wait for it, up to 2 minutes.
	t.Run("kubectl crowsnest through a port-forward", func(t *testing.T) {
		start := time.Now()
		for {
			out, err := tool(ctx, t, "kubectl-crowsnest", "images", "-n", scanned, "--server", base, "--token", token, "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			var list struct {
				Items []struct {
					Digest string `json:"digest"`
				} `json:"items"`
			}
			if err := json.Unmarshal([]byte(out), &list); err != nil {
				t.Fatalf("kubectl crowsnest images -o json printed %q: %v", firstLines(out, 5), err)
			}
			var got []string
			for _, s := range list.Items {
				got = append(got, s.Digest)
			}
			if slices.Contains(got, w.pause) && slices.Contains(got, w.alpine) {
				t.Logf("kubectl crowsnest images -n %s lists both images (waited %s)", scanned, time.Since(start).Round(100*time.Millisecond))
				return
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("kubectl crowsnest images -n %s lists %v after 2m, want %s and %s among them", scanned, got, w.pause, w.alpine)
			}
			time.Sleep(time.Second)
		}
	})
}
