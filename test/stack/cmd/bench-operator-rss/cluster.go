package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/proc"
	"github.com/crowsnest-dev/crowsnest/test/stack/internal/services"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

// backend is what the operator talks to: envtest's kube-apiserver and
// etcd (no kubelet, no controllers), and a results-api process on a
// throwaway Postgres.
type backend struct {
	env        *envtest.Environment
	Kubeconfig string
	Client     client.Client        // as the cluster admin
	Clientset  kubernetes.Interface // for the Job informer and status writes
	Postgres   *services.Postgres
	API        *services.ResultsAPI
	Token      string // results-api's admin (write) token
	// ClusterScannerCRD says whether the ClusterScanner CRD was installed
	// (operator/config/crd/bases holds it once `make generate` has run).
	ClusterScannerCRD bool

	stops []func()
}

// startBackend starts everything; on error it stops what it started.
func (b *bench) startBackend(ctx context.Context, name string) (_ *backend, err error) {
	dir := filepath.Join(b.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	be := &backend{}
	defer func() {
		if err != nil {
			be.Stop()
		}
	}()
	assets, err := kubetest.AssetsDir()
	if err != nil {
		return nil, err
	}
	crds := filepath.Join(b.o.Root, "operator", "config", "crd", "bases")
	_, statErr := os.Stat(filepath.Join(crds, "crowsnest.dev_clusterscanners.yaml"))
	be.ClusterScannerCRD = statErr == nil
	be.env = &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: []string{crds}, ErrorIfCRDPathMissing: true}
	cfg, err := be.env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest control plane: %w", err)
	}
	be.stops = append(be.stops, func() { _ = be.env.Stop() })
	cfg.QPS, cfg.Burst = 2000, 4000
	user, err := be.env.AddUser(envtest.User{Name: "crowsnest-operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add operator user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	be.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(be.Kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	if be.Client, be.Clientset, err = clients(cfg); err != nil {
		return nil, err
	}
	b.logf("%s: kube-apiserver at %s", name, cfg.Host)

	if be.Postgres, err = services.StartPostgres(ctx); err != nil {
		return nil, err
	}
	be.stops = append(be.stops, func() { _ = be.Postgres.Stop() })
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	be.Token = hex.EncodeToString(tok[:])
	be.API = &services.ResultsAPI{Binary: b.bins["results-api"], LogDir: dir, StateDir: dir,
		Listen: fmt.Sprintf("127.0.0.1:%d", port), DatabaseURL: be.Postgres.URL, WriteToken: be.Token}
	be.stops = append(be.stops, be.API.Stop)
	if err := be.API.Start(ctx); err != nil {
		return nil, err
	}
	b.logf("%s: results-api at %s on Postgres", name, be.API.URL())
	return be, nil
}

// Stop stops results-api, Postgres and the control plane, in that order.
func (be *backend) Stop() {
	for i := len(be.stops) - 1; i >= 0; i-- {
		be.stops[i]()
	}
	be.stops = nil
}

func clients(cfg *rest.Config) (client.Client, kubernetes.Interface, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), crowsnestv1alpha1.AddToScheme(scheme)); err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, cs, nil
}
