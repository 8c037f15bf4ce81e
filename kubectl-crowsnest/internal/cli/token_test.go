package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestServerGetsOnlyTheGivenToken plays a --server that is not results-api
// (a mistyped or planted URL): it must never receive the kubeconfig's API
// server credentials, only a token given with --token.
func TestServerGetsOnlyTheGivenToken(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"items":[]}`))
	}))
	defer srv.Close()

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "kube-api-server-secret"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, func(string) string { return "" })
		cmd.SetArgs(append(args, "changes", "--kubeconfig", kc, "--server", srv.URL))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	run()
	run("--token", "results-api-token")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "" || seen[1] != "Bearer results-api-token" {
		t.Fatalf("Authorization headers %q, want none and then only --token's", seen)
	}
}
