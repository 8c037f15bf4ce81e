package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/version"
)

func execute(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v: %v (stderr %q)", args, err, errOut.String())
	}
	return out.String()
}

// TestVersion: --version and the version subcommand print the build line
// without a kubeconfig or a server; -o json prints it as an object; -v stays
// free (kubectl users know it as verbosity).
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		got := strings.TrimSpace(execute(t, args...))
		if !strings.HasPrefix(got, "kubectl-crowsnest dev (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")") {
			t.Errorf("%v printed %q", args, got)
		}
	}
	var info version.Info
	if err := json.Unmarshal([]byte(execute(t, "version", "-o", "json")), &info); err != nil || info.Version != "dev" || info.GoVersion != runtime.Version() {
		t.Errorf("version -o json: %+v %v", info, err)
	}
	cmd := NewCommand(genericiooptions.NewTestIOStreamsDiscard(), func(string) string { return "" })
	cmd.SetArgs([]string{"-v"})
	if err := cmd.Execute(); err == nil {
		t.Error("-v accepted: cobra took it for --version")
	}
}
