package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
)

var (
	repoRoot string
	apiCfg   *rest.Config
)

// TestMain starts one real kube-apiserver + etcd for the package, with the
// chart's CRDs and minimal stand-ins for the monitoring.coreos.com and
// cert-manager.io CRDs installed.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The helper process of TestSSLCertDirTrustsMountedCA needs no cluster.
	if os.Getenv("CHARTTEST_HTTPS_GET") != "" {
		return m.Run()
	}
	var err error
	if repoRoot, err = Repo(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg, stop, err := kubetest.Start(kubetest.WithCRDs(
		filepath.Join(repoRoot, ChartDir, "crds"),
		filepath.Join("testdata", "monitoring-crds"),
		filepath.Join("testdata", "cert-manager-crds"),
	))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = stop() }()
	apiCfg = cfg
	return m.Run()
}
