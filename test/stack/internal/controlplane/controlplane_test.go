package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestStartFailureStopsWhatItStarted starts etcd and kube-apiserver for real,
// then fails on a missing kube-controller-manager: Start must return that
// error (not panic) and leave no child process running. The state directory
// does not exist beforehand: Start creates it.
func TestStartFailureStopsWhatItStarted(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through make (make e2e), which builds bin/k8s")
	}
	partial := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if err := os.Symlink(filepath.Join(assets, b), filepath.Join(partial, b)); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(t.TempDir(), "does", "not", "exist")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cp, err := Start(ctx, Options{AssetsDir: partial, StateDir: state, Nodes: 1})
	if err == nil {
		_ = cp.Stop()
		t.Fatal("Start succeeded without kube-controller-manager")
	}
	if !strings.Contains(err.Error(), "kube-controller-manager") {
		t.Errorf("error does not name the missing component: %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(state, "kubeconfig")); statErr != nil {
		t.Errorf("state dir was not created and used: %v", statErr)
	}
	if kids := children(t); len(kids) > 0 {
		t.Fatalf("processes left running after a failed Start: %s", strings.Join(kids, ", "))
	}
}

// children lists this process's live child processes as "pid(name)".
func children(t *testing.T) []string {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // not a pid, or already gone
		}
		// pid (comm) state ppid ...; comm may hold spaces, so split after ')'.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) >= 2 && fields[1] == self && fields[0] != "Z" {
			out = append(out, e.Name()+s[strings.IndexByte(s, '('):end+1])
		}
	}
	return out
}

// TestRenameContext: the admin kubeconfig names its one context, cluster
// and user ContextName (the Tiltfile allows that context), keeping the
// server and credentials.
func TestRenameContext(t *testing.T) {
	in := []byte(`apiVersion: v1
kind: Config
clusters: [{name: envtest, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: envtest, user: {token: secret}}]
contexts: [{name: envtest, context: {cluster: envtest, user: envtest}}]
current-context: envtest
`)
	out, err := renameContext(in, ContextName)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if cfg.CurrentContext != ContextName || len(cfg.Contexts) != 1 || ctx == nil || ctx.Cluster != ContextName || ctx.AuthInfo != ContextName {
		t.Fatalf("contexts %v, current %q: want only %q", cfg.Contexts, cfg.CurrentContext, ContextName)
	}
	if got := cfg.Clusters[ContextName].Server; got != "https://127.0.0.1:6443" {
		t.Errorf("server %q", got)
	}
	if got := cfg.AuthInfos[ContextName].Token; got != "secret" {
		t.Errorf("token %q", got)
	}
	if _, err := renameContext([]byte("current-context: nowhere\n"), ContextName); err == nil {
		t.Error("a kubeconfig without its current context was renamed")
	}
}
