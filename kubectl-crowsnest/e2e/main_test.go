package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
	"github.com/crowsnest-dev/crowsnest/test/support"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"
	"github.com/crowsnest-dev/crowsnest/test/support/natstest"
	"github.com/crowsnest-dev/crowsnest/test/support/pgtest"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/cli"
	"github.com/crowsnest-dev/crowsnest/test/support/resultsapitest"
)

var (
	restConfig *rest.Config
	kube       kubernetes.Interface
)

func TestMain(m *testing.M) {
	cfg, stop, err := kubetest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	restConfig = cfg
	code := 1
	if kube, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = pgtest.Main(m)
	}
	if err := stop(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
	}
	os.Exit(code)
}

// fixture is one entry of results-api/testdata/grype/manifest.json.
type fixture struct {
	Name     string         `json:"name"`
	File     string         `json:"file"`
	Image    string         `json:"image"`
	Digest   string         `json:"digest"`
	Findings int            `json:"findings"`
	Counts   map[string]int `json:"counts"`
	Fixable  int            `json:"fixable"`
	IDs      []string       `json:"vulnerabilityIds"`
}

// fixtures reads the real Grype fixtures (not the synthetic large one).
func fixtures(t *testing.T) (dir string, byName map[string]fixture) {
	t.Helper()
	root, err := support.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(root, "results-api", "testdata", "grype")
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Fixtures []struct {
			fixture
			Synthetic bool `json:"synthetic"`
		} `json:"fixtures"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	byName = map[string]fixture{}
	for _, f := range m.Fixtures {
		if !f.Synthetic {
			byName[f.Name] = f.fixture
		}
	}
	if len(byName) != 5 {
		t.Fatalf("manifest lists %d real fixtures, want 5", len(byName))
	}
	return dir, byName
}

// seeded is a results-api holding the five real fixtures' reports.
type seeded struct {
	*resultsapitest.Server
	dir string
	fx  map[string]fixture
	js  jetstream.JetStream
}

// startSeeded runs results-api connected to a JetStream server (for the
// operator's inventory snapshots) and uploads the fixtures.
func startSeeded(t *testing.T) *seeded {
	t.Helper()
	dir, fx := fixtures(t)
	_, natsURL := natstest.StartT(t)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := eventsv1.EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	s := &seeded{Server: resultsapitest.Start(t, resultsapitest.WithNATS(natsURL)), dir: dir, fx: fx, js: js}
	for _, f := range fx {
		s.put(t, f.Digest, f.Image, f.File)
	}
	return s
}

// put uploads a fixture file as digest's report, as the uploader does.
func (s *seeded) put(t *testing.T, digest, image, file string) {
	t.Helper()
	bom, err := os.ReadFile(filepath.Join(s.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	s.putBOM(t, digest, image, bom)
}

// putBOM uploads bom as digest's report, as the uploader does.
func (s *seeded) putBOM(t *testing.T, digest, image string, bom []byte) {
	t.Helper()
	resultsapitest.Put(t, s.Client(), s.URL, s.Token, digest, image, bom)
}

// kubeconfig writes a kubeconfig for the test control plane; edit changes
// its single user before it is written.
func kubeconfig(t *testing.T, edit func(*clientcmdapi.AuthInfo)) string {
	t.Helper()
	user := &clientcmdapi.AuthInfo{
		ClientCertificateData: restConfig.CertData,
		ClientKeyData:         restConfig.KeyData,
		Token:                 restConfig.BearerToken,
	}
	if edit != nil {
		edit(user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: restConfig.Host, CertificateAuthorityData: restConfig.CAData}
	cfg.AuthInfos["test"] = user
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: "default"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// plugin runs `kubectl crowsnest args…` in process and returns its stdout,
// stderr and error.
func plugin(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, func(string) string { return "" })
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// mustPlugin is plugin for runs that must succeed.
func mustPlugin(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := plugin(t, args...)
	if err != nil {
		t.Fatalf("kubectl crowsnest %s: %v (stderr: %s)", strings.Join(args, " "), err, errOut)
	}
	return out
}

// table splits a printed table into rows of cells (columns are separated
// by at least three spaces, as kubectl's tab writer pads them; cells such
// as "2 critical, 1 high" keep their single spaces).
func table(t *testing.T, s string) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		var cells []string
		for _, c := range strings.Split(l, "   ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		if i == 0 {
			header = cells
			continue
		}
		rows = append(rows, cells)
	}
	return header, rows
}

// col returns the cells of one column by header name.
func col(t *testing.T, header []string, rows [][]string, name string) []string {
	t.Helper()
	i := -1
	for j, h := range header {
		if h == name {
			i = j
		}
	}
	if i < 0 {
		t.Fatalf("no column %s in %v", name, header)
	}
	out := make([]string, len(rows))
	for r, row := range rows {
		if i >= len(row) {
			t.Fatalf("row %v has no column %s", row, name)
		}
		out[r] = row[i]
	}
	return out
}
