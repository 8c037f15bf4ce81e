package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/test/stack/internal/controlplane"
)

// KubeContext is the context of the stack's admin kubeconfig
// (Cluster.Kubeconfig): the Tiltfile deploys onto it and onto kind's, and
// refuses every other.
const KubeContext = controlplane.ContextName

// The environment the Tiltfile reads on the stack's cluster (DevEnv).
const (
	// EnvDevRegistry is Tilt's default_registry: where its builds are
	// pushed and pulled from.
	EnvDevRegistry = "CROWSNEST_DEV_REGISTRY"
	// EnvDevValues lists chart values files (comma-separated) that the
	// Tiltfile adds after deploy/dev/values.yaml.
	EnvDevValues = "CROWSNEST_DEV_VALUES"
	// EnvDevDatabaseURLFile names a file holding an external Postgres URL:
	// deploy/dev/secrets.sh puts it into the dev database Secret.
	EnvDevDatabaseURLFile = "CROWSNEST_DEV_DATABASE_URL_FILE"
)

// writeDevFiles writes what the dev loop (make dev: tilt up, or tilt ci)
// needs to deploy the repository's Tiltfile onto this cluster
// (Options.Chart): the machine's chart values (the same settings the chart
// suite installs with: grype and NATS images from the stack's registry,
// plain HTTP to it, the Grype DB mirror, the stack's Postgres instead of
// the bundled one), the Postgres URL for Pods, and dev.env exporting
// DevEnv for a shell (`source <state>/dev.env && make dev`).
func (s *Stack) writeDevFiles() error {
	dir := filepath.Join(s.Options.StateDir, "dev")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("dev loop files: %w", err)
	}
	reg := s.ImageRegistry()
	apiServerPorts, scanEgressPorts, err := s.NetworkPolicyPorts()
	if err != nil {
		return fmt.Errorf("dev values: %w", err)
	}
	values := map[string]any{
		"global": map[string]any{
			"scan": map[string]any{"admissionPolicy": map[string]any{
				// Tilt rewrites the operator's uploader image to its own build.
				"extraScanImages": []string{reg + "/crowsnest-uploader:*"},
			}},
			// The enforced NetworkPolicies need this cluster's ports, as
			// in the chart suite's install: without them results-api's Pods
			// cannot list RoleBindings once kube-router has synced their
			// policy, and restart.
			"networkPolicy": map[string]any{"apiServerPorts": apiServerPorts, "scanEgressPorts": scanEgressPorts},
		},
		"operator": map[string]any{
			"extraArgs":  []string{"--insecure-registries=" + s.Registry.Host},
			"grypeImage": map[string]any{"repository": reg + "/crowsnest-grype"},
		},
		"matcher": map[string]any{
			"upstreamURL": s.DBMirrorURL,
			"extraArgs":   []string{"--allow-insecure-upstream"},
		},
		"nats":     map[string]any{"image": map[string]any{"repository": reg + "/crowsnest-nats"}},
		"postgres": map[string]any{"enabled": false},
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		return fmt.Errorf("dev values: %w", err)
	}
	head := "# Written by the local stack: this machine's chart values for the Tilt dev\n" +
		"# loop (CROWSNEST_DEV_VALUES), after deploy/dev/values.yaml.\n"
	files := map[string]string{
		s.devValuesFile():      head + string(out),
		s.devDatabaseURLFile(): s.Postgres.PodURL,
		s.DevEnvFile():         exportLines(s.DevEnv()),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return fmt.Errorf("dev loop files: %w", err)
		}
	}
	return nil
}

func (s *Stack) devValuesFile() string {
	return filepath.Join(s.Options.StateDir, "dev", "values.yaml")
}

func (s *Stack) devDatabaseURLFile() string {
	return filepath.Join(s.Options.StateDir, "dev", "database-url")
}

// DevEnvFile is the shell file exporting DevEnv (Options.Chart).
func (s *Stack) DevEnvFile() string { return filepath.Join(s.Options.StateDir, "dev.env") }

// DevEnv is the environment (KEY=value) in which the Tiltfile deploys onto
// this cluster (Options.Chart): its kubeconfig (context KubeContext), the
// registry Tilt pushes its builds to, the machine's chart values and the
// Postgres URL file.
func (s *Stack) DevEnv() []string {
	return []string{
		"KUBECONFIG=" + s.Cluster.Kubeconfig,
		EnvDevRegistry + "=" + s.ImageRegistry(),
		EnvDevValues + "=" + s.devValuesFile(),
		EnvDevDatabaseURLFile + "=" + s.devDatabaseURLFile(),
	}
}

func exportLines(env []string) string {
	var b strings.Builder
	b.WriteString("# The Tilt dev loop on the local stack's cluster: source this file, then make dev.\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	return b.String()
}
