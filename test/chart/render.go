package charttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/crowsnest-dev/crowsnest/test/support"
)

// Paths inside the repository.
const (
	ChartDir           = "helm/crowsnest"
	OperatorRole       = "operator/config/rbac/role.yaml"
	LeaderElectionRole = "operator/config/rbac/leader_election_role.yaml"
	MetricsReaderRole  = "operator/config/rbac/metrics_reader_role.yaml"
)

// KubeVersion is the Kubernetes version charts are rendered for: the
// kube-apiserver the tests run (hack/versions.env KUBE_VERSION).
const KubeVersion = "v1.36.3"

// Repo returns the repository root.
func Repo() (string, error) { return support.RepoRoot() }

// Helm returns the path of the pinned helm binary (bin/helm, built by
// `hack/tools.sh helm`).
func Helm(root string) (string, error) {
	p := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("helm not found (run `hack/tools.sh helm`): %w", err)
	}
	return p, nil
}

// RunHelm runs helm with args in the repository root, bounded by a timeout,
// and returns stdout; a failure carries stderr.
func RunHelm(ctx context.Context, root string, args ...string) ([]byte, error) {
	helm, err := Helm(root)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = root
	// Keep helm away from the user's kubeconfig and repositories.
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null", "HELM_CACHE_HOME="+os.TempDir()+"/charttest-helm",
		"HELM_CONFIG_HOME="+os.TempDir()+"/charttest-helm", "HELM_DATA_HOME="+os.TempDir()+"/charttest-helm")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %v: %w\n%s%s", args, err, stderr.String(), stdout.String())
	}
	return stdout.Bytes(), nil
}

// Template renders the chart as release "crowsnest" in namespace ns with the
// given extra helm arguments (--set, -f, --api-versions) and returns every
// object, CRDs included.
func Template(ctx context.Context, root, ns string, args ...string) ([]*unstructured.Unstructured, error) {
	return TemplateRelease(ctx, root, "crowsnest", ns, args...)
}

// TemplateRelease is Template for a release of another name.
func TemplateRelease(ctx context.Context, root, release, ns string, args ...string) ([]*unstructured.Unstructured, error) {
	base := []string{"template", release, ChartDir, "--namespace", ns, "--include-crds", "--kube-version", KubeVersion}
	out, err := RunHelm(ctx, root, append(base, args...)...)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// Decode splits a multi-document YAML stream into objects, skipping empty
// documents.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode rendered manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}
