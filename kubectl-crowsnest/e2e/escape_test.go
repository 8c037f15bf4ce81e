package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

// hostileName is what a malicious image's package database names a package:
// clear the screen, retitle the terminal window, then a carriage return
// that would let the rest of the line overwrite what came before.
const hostileName = "libssl3\x1b[2J\x1b]0;owned\a\rfine"

// TestReportDataCannotDriveTheTerminal plays the author of a scanned image:
// its package database names a package (and its version) with terminal
// escape sequences, which Grype copies into the BOM and results-api stores
// and serves. Every output of the plugin that shows them — the findings
// table, -o wide, -o json, -o yaml, `cve` — prints them escaped, never raw.
func TestReportDataCannotDriveTheTerminal(t *testing.T) {
	s := startSeeded(t)
	alpine := s.fx["alpine"]
	bom, err := os.ReadFile(filepath.Join(s.dir, alpine.File))
	if err != nil {
		t.Fatal(err)
	}
	name, _ := json.Marshal(hostileName)
	version, _ := json.Marshal("3.1.1-r1\x1b[8m")
	hostile := strings.Replace(string(bom), `"name": "libssl3",`, `"name": `+string(name)+`,`, 1)
	hostile = strings.Replace(hostile, `"name": `+string(name)+`,
      "version": "3.1.1-r1",`, `"name": `+string(name)+`,
      "version": `+string(version)+`,`, 1)
	if !strings.Contains(hostile, `\u001b[8m`) {
		t.Fatal("fixture changed: libssl3's name and version were not replaced")
	}
	file := filepath.Join(t.TempDir(), "hostile.cdx.json")
	if err := os.WriteFile(file, []byte(hostile), 0o600); err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + zeros(7)
	s.dir = filepath.Dir(file)
	s.put(t, digest, "crowsnest.dev/demo/hostile@"+digest, filepath.Base(file))
	kc := kubeconfig(t, nil)

	for _, args := range [][]string{
		{"image", digest},
		{"image", digest, "-o", "wide"},
		{"image", digest, "-o", "json"},
		{"image", digest, "-o", "yaml"},
		{"cve", "CVE-2024-5535", "--kubeconfig", kc},
	} {
		out := mustPlugin(t, append(args, "--server", s.URL)...)
		if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f }); i >= 0 {
			t.Errorf("%v printed a raw control character %q at %d:\n%q", args, out[i], i, out[max(0, i-40):min(len(out), i+40)])
		}
		switch args[len(args)-1] {
		case "json", "yaml":
			var rep resultsapi.ReportDetail
			if err := yaml.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Package.Name == hostileName
			}
			if !found {
				t.Errorf("%v: the package's name does not decode back to what the report says", args)
			}
		default:
			if !strings.Contains(out, `libssl3\x1b[2J\x1b]0;owned\a\rfine`) {
				t.Errorf("%v does not show the package's name, escaped:\n%s", args, out)
			}
		}
	}
}
