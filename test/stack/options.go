package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Binaries are the executables the stack runs; empty fields default to
// <repo>/bin/<name> (kube binaries: <repo>/bin/k8s).
type Binaries struct {
	KubeAssets, Kwok, NATS         string
	ResultsAPI, Operator, Uploader string
	Grype, Vulndb, Matcher         string
	Notifier                       string
	CoreDNS                        string // the cluster DNS (hack/tools.sh coredns)
	KubeRouter                     string // the NetworkPolicy enforcer (hack/tools.sh kube-router)
	// Images holds the OCI layouts of make images (<repo>/dist/images): the
	// scan Jobs' uploader and grype images.
	Images string
}

// Options configure a stack.
type Options struct {
	Root     string // repository root (holds go.work); found from the working directory when empty
	StateDir string // temp state; a fresh temp dir when empty, removed on Close
	Bin      Binaries

	Nodes int // kwok Nodes
	// RegistryAddr is the registry's address; empty: a free port on
	// HostIP (the node network's gateway), which containerd and Grype in
	// scan Pods reach.
	RegistryAddr string
	APIAddr      string // results-api's front address for people and tests; "127.0.0.1:0" picks a free port
	APIReplicas  int    // results-api replicas behind the front (default 2)
	// ClusterOnly runs the control plane, registry and imageID writer only
	// (no real node, NATS, Postgres, results-api, operator or matcher).
	ClusterOnly bool
	// Chart runs the cluster a `helm install` of the chart needs instead of
	// the stack's own Crowsnest processes (chart.go): the real node as the
	// only node (untainted, no kwok Nodes), kube-apiserver reachable from
	// its Pods through the kubernetes Service, CoreDNS behind kube-dns,
	// kube-proxy (waited for when another stack holds it), a default
	// StorageClass, every project image in the registry (ChartImages),
	// Postgres for Pods (Postgres.PodURL) and a Grype DB mirror (DBMirrorURL).
	Chart bool
	// NetworkPolicies enforces NetworkPolicies on the real node: kube-router's
	// firewall (internal/netpol) beside kube-proxy, waited for like it in
	// chart mode when another stack runs it.
	NetworkPolicies bool
	OnlineDB        bool // use Grype's published DB instead of the project's offline one
	// DBUpdateAfter, offline and above zero: this long after start, a newer
	// DB that publishes DemoAdvisories is imported into the matcher, which
	// re-matches every report (the Changes view fills live).
	DBUpdateAfter time.Duration
	// HoldBackAdvisories leaves DemoAdvisories out of the first offline DB
	// (UpdateDB publishes them; in chart mode, PublishNewerDB).
	HoldBackAdvisories bool
	Demo               bool // create the demo namespace, Scanner and Pods
	// RequireGoDemo makes a failed build of the Go demo image an error
	// (the e2e suite scans it); otherwise the stack starts without it.
	RequireGoDemo bool

	RetryBackoff time.Duration // operator --retry-backoff
	JobTTL       time.Duration // operator --job-ttl
	StuckGrace   time.Duration // operator --stuck-grace (how long a scan Pod may wait on an image pull)
	// ReadAuth is results-api's --read-auth: open (default) or kubernetes;
	// the stack then makes an admin and a demo viewer ServiceAccount and
	// gives the operator a token (ReadTokens).
	ReadAuth string
	// Namespaces whose service accounts may write to results-api (its
	// --allowed-service-accounts, as <namespace>/*) in serviceaccount mode.
	// The demo namespace is always included.
	Namespaces []string
	// OnImageID, when set, is called when a Pod gets its imageIDs: the
	// moment a kubelet would report the Pod running a known digest.
	OnImageID func(namespace, name string, at time.Time)
}

func (o *Options) defaults() error {
	if o.Root == "" {
		root, err := findRoot()
		if err != nil {
			return err
		}
		o.Root = root
	}
	bin := filepath.Join(o.Root, "bin")
	def := func(p *string, path string) {
		if *p == "" {
			*p = path
		}
	}
	def(&o.Bin.KubeAssets, filepath.Join(bin, "k8s"))
	def(&o.Bin.Kwok, filepath.Join(bin, "kwok"))
	def(&o.Bin.NATS, filepath.Join(bin, "nats-server"))
	def(&o.Bin.ResultsAPI, filepath.Join(bin, "results-api"))
	def(&o.Bin.Operator, filepath.Join(bin, "operator"))
	def(&o.Bin.Uploader, filepath.Join(bin, "uploader"))
	def(&o.Bin.Grype, filepath.Join(bin, "grype"))
	def(&o.Bin.Vulndb, filepath.Join(bin, "vulndb"))
	def(&o.Bin.Matcher, filepath.Join(bin, "matcher"))
	def(&o.Bin.Notifier, filepath.Join(bin, "notifier"))
	def(&o.Bin.CoreDNS, filepath.Join(bin, "coredns"))
	def(&o.Bin.KubeRouter, filepath.Join(bin, "kube-router"))
	def(&o.Bin.Images, filepath.Join(o.Root, "dist", "images"))
	def(&o.APIAddr, "127.0.0.1:0")
	def(&o.ReadAuth, "open")
	switch {
	case o.Chart:
		o.Nodes = 0 // the chart's Pods run on the real node, not on kwok's
	case o.Nodes < 1:
		o.Nodes = 2
	}
	if o.APIReplicas < 1 {
		o.APIReplicas = 2
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 15 * time.Second
	}
	if o.StuckGrace <= 0 {
		o.StuckGrace = time.Minute
	}
	if o.JobTTL <= 0 {
		o.JobTTL = 10 * time.Minute
	}
	if o.ReadAuth != "open" && o.ReadAuth != "kubernetes" {
		return fmt.Errorf("read auth %q: want open or kubernetes", o.ReadAuth)
	}
	return nil
}

// missing lists the binaries a full stack needs that are not there.
func (o *Options) missing() []string {
	need := []string{filepath.Join(o.Bin.KubeAssets, "kube-apiserver"), o.Bin.Kwok}
	switch {
	case o.Chart:
		need = append(need, o.Bin.Vulndb, filepath.Join(o.Bin.KubeAssets, "kubelet"), filepath.Join(o.Bin.KubeAssets, "kube-proxy"), o.Bin.CoreDNS)
		for _, name := range ChartImages {
			need = append(need, filepath.Join(o.Bin.Images, name, "index.json"))
		}
	case !o.ClusterOnly:
		need = append(need, o.Bin.NATS, o.Bin.ResultsAPI, o.Bin.Operator, o.Bin.Grype, o.Bin.Matcher, o.Bin.Notifier,
			filepath.Join(o.Bin.KubeAssets, "kubelet"), filepath.Join(o.Bin.KubeAssets, "kube-proxy"), o.Bin.CoreDNS, filepath.Join(o.Bin.Images, "uploader", "index.json"), filepath.Join(o.Bin.Images, "grype", "index.json"))
		if !o.OnlineDB {
			need = append(need, o.Bin.Vulndb)
		}
	}
	if o.NetworkPolicies && !o.ClusterOnly {
		need = append(need, o.Bin.KubeRouter)
	}
	var out []string
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			out = append(out, p)
		}
	}
	return out
}

// findRoot looks for go.work above the working directory, then above the
// executable (bin/stack in a checkout).
func findRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if root, ok := rootAbove(wd); ok {
		return root, nil
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if root, ok := rootAbove(filepath.Dir(exe)); ok {
				return root, nil
			}
		}
	}
	return "", errors.New("go.work not found above the working directory or the stack binary: run from the Crowsnest checkout")
}

func rootAbove(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
