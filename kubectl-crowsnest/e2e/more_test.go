package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

// TestCVE: which images carry a vulnerability, and the workloads running
// them from the Pods of the cluster.
func TestCVE(t *testing.T) {
	s := startSeeded(t)
	shop, jobs := workloads(t, s.fx)
	kc := kubeconfig(t, nil)

	// CVE-2024-5535 is in alpine's libcrypto3 and libssl3 and in debian's
	// libssl3 and openssl; both run in shop's Deployment web.
	header, rows := table(t, mustPlugin(t, "cve", "CVE-2024-5535", "--server", s.URL, "--kubeconfig", kc))
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4:\n%v", len(rows), rows)
	}
	for _, w := range col(t, header, rows, "WORKLOADS") {
		if w != shop+"/deployment/web" {
			t.Errorf("WORKLOADS %q", w)
		}
	}
	if pk := col(t, header, rows, "PACKAGE"); !slices.Equal(pk, []string{"libcrypto3", "libssl3", "libssl3", "openssl"}) {
		t.Errorf("packages %v", pk)
	}

	// GHSA-4374-p667-p6c8 (golang.org/x/net) is in gobinary only.
	var v struct { // the API's Vulnerability; each image with the workloads running it
		Images []struct {
			resultsapi.AffectedImage
			RunningIn *[]resultsapi.RunningWorkload `json:"runningIn"`
		} `json:"images"`
	}
	if err := json.Unmarshal([]byte(mustPlugin(t, "cve", "GHSA-4374-p667-p6c8", "-o", "json", "--server", s.URL, "--kubeconfig", kc)), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Images) != 1 || v.Images[0].Digest != s.fx["gobinary"].Digest || v.Images[0].RunningIn == nil ||
		len(*v.Images[0].RunningIn) != 1 || (*v.Images[0].RunningIn)[0].Name != "web" || !slices.Equal((*v.Images[0].RunningIn)[0].Containers, []string{"sidecar"}) {
		t.Fatalf("GHSA-4374-p667-p6c8: %+v", v)
	}

	// -n keeps the images running there: node's lodash issue runs in jobs,
	// not in shop.
	nodeID := s.fx["node"].IDs[0]
	out, errOut, err := plugin(t, "cve", nodeID, "-n", shop, "--server", s.URL, "--kubeconfig", kc)
	if err != nil || out != "" || !strings.Contains(errOut, "No image running in namespace "+shop+" carries "+nodeID) {
		t.Fatalf("cve -n %s: out %q stderr %q err %v", shop, out, errOut, err)
	}
	header, rows = table(t, mustPlugin(t, "cve", nodeID, "-n", jobs, "--server", s.URL, "--kubeconfig", kc))
	if got := col(t, header, rows, "WORKLOADS"); len(got) != 1 || got[0] != jobs+"/pod/batch" {
		t.Fatalf("cve -n %s: %v", jobs, got)
	}

	// Without a kubeconfig that can list Pods the images are still listed.
	denied := kubeconfig(t, nil)
	out, errOut, err = plugin(t, "cve", "CVE-2024-5535", "--server", s.URL, "--kubeconfig", denied, "--as", "nobody")
	if err != nil || !strings.Contains(errOut, "Warning: cannot tell which workloads run these images") || strings.Count(out, "CVE-2024-5535") != 4 || !strings.Contains(out, "<unknown>") {
		t.Fatalf("without pods: out %q stderr %q err %v", out, errOut, err)
	}

	_, _, err = plugin(t, "cve", "CVE-1999-0001", "--server", s.URL, "--kubeconfig", kc)
	if err == nil || !strings.Contains(err.Error(), "no scanned image carries CVE-1999-0001") {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestChanges: every first report is a baseline; a later report that
// resolves findings shows what it resolved.
func TestChanges(t *testing.T) {
	s := startSeeded(t)
	alpine := s.fx["alpine"]
	// alpine's digest reported again with clean's BOM: its 22 findings resolved.
	s.put(t, alpine.Digest, alpine.Image, s.fx["clean"].File)

	header, rows := table(t, mustPlugin(t, "changes", "--since", "1h", "--server", s.URL))
	if len(rows) != 6 {
		t.Fatalf("%d changes, want 5 baselines and 1 rescan:\n%v", len(rows), rows)
	}
	if cause := col(t, header, rows, "CAUSE"); cause[0] != "rescan" || strings.Count(strings.Join(cause, "|"), "scan (first report)") != 5 {
		t.Fatalf("causes %v", cause)
	}
	if r := rows[0]; col(t, header, rows, "RESOLVED")[0] != "2 critical, 2 high, 18 medium" || col(t, header, rows, "NEW")[0] != "0" {
		t.Fatalf("rescan row %v", r)
	}

	var list resultsapi.ChangeList
	if err := json.Unmarshal([]byte(mustPlugin(t, "changes", "--since", "2h", "--min-severity", "critical", "--limit", "3", "-o", "json", "--server", s.URL)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 || list.Items[0].Digest != alpine.Digest || list.Items[0].ResolvedCounts.Critical != 2 || len(list.Items[0].Resolved) != 2 {
		t.Fatalf("--min-severity critical --limit 3: %+v", list.Items)
	}
	_, wide := table(t, mustPlugin(t, "changes", "-o", "wide", "--server", s.URL))
	if !strings.Contains(strings.Join(wide[0], " "), "CVE-2024-5535") {
		t.Fatalf("wide row lacks the resolved ids: %v", wide[0])
	}

	// debian reported again with one finding newly listed in CISA KEV (a
	// rating as Grype writes it): no new or resolved finding, one KEV listing.
	debian := s.fx["debian"]
	kevID := s.putWithKEV(t, debian)
	header, rows = table(t, mustPlugin(t, "changes", "--since", "1h", "--server", s.URL))
	if len(rows) != 7 || col(t, header, rows, "DIGEST")[0] != output.ShortDigest(debian.Digest) ||
		col(t, header, rows, "NEW")[0] != "0" || col(t, header, rows, "RESOLVED")[0] != "0" || col(t, header, rows, "NEW-IN-KEV")[0] != "1" {
		t.Fatalf("after a KEV listing, want a first row of debian with 1 finding newly in KEV:\n%v\n%v", header, rows)
	}
	header, wide = table(t, mustPlugin(t, "changes", "-o", "wide", "--server", s.URL))
	if got := col(t, header, wide, "KEV-IDS")[0]; got != kevID {
		t.Fatalf("KEV-IDS %q, want %s", got, kevID)
	}

	// A window in the future holds nothing.
	out, errOut, err := plugin(t, "changes", "--since", "2099-01-01T00:00:00Z", "--server", s.URL)
	if err != nil || out != "" || !strings.Contains(errOut, "No changes since 2099-01-01T00:00:00Z") {
		t.Fatalf("empty window: %q %q %v", out, errOut, err)
	}
}

// TestWhy: every container of a real Pod, by the imageIDs in its status.
func TestWhy(t *testing.T) {
	s := startSeeded(t)
	shop, _ := workloads(t, s.fx)
	kc := kubeconfig(t, nil)
	unscanned := "sha256:" + zeros(7)
	runPod(t, shop, "mixed", "", "",
		podContainer{name: "new", image: "crowsnest.dev/demo/new:1", imageID: "crowsnest.dev/demo/new@" + unscanned},
		podContainer{name: "odd", image: "local/odd:1", imageID: "local-image-id-without-digest"},
		podContainer{name: "waiting", image: "crowsnest.dev/demo/alpine:3.18"})

	out := mustPlugin(t, "why", "pod/"+webPod, "-n", shop, "--server", s.URL, "--kubeconfig", kc)
	summary, findings, ok := strings.Cut(out, "\n\n")
	if !ok {
		t.Fatalf("no findings table:\n%s", out)
	}
	header, rows := table(t, summary)
	if got := col(t, header, rows, "CONTAINER"); !slices.Equal(got, []string{"migrate", "app", "sidecar"}) {
		t.Fatalf("containers %v", got)
	}
	if got := col(t, header, rows, "CRITICAL"); !slices.Equal(got, []string{"2", "2", "1"}) {
		t.Fatalf("critical %v", got)
	}
	header, rows = table(t, findings)
	perContainer := map[string]int{}
	for _, c := range col(t, header, rows, "CONTAINER") {
		perContainer[c]++
	}
	if want := map[string]int{"migrate": 18, "app": 22, "sidecar": 6}; !mapsEqual(perContainer, want) {
		t.Fatalf("findings per container %v, want %v", perContainer, want)
	}

	var res struct {
		Pod        string `json:"pod"`
		Containers []struct {
			Name   string                   `json:"name"`
			State  string                   `json:"state"`
			Digest string                   `json:"digest"`
			Report *resultsapi.ReportDetail `json:"report"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(mustPlugin(t, "why", "pod/mixed", "-n", shop, "-o", "json", "--server", s.URL, "--kubeconfig", kc)), &res); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, c := range res.Containers {
		states[c.Name] = c.State
		if c.Report != nil {
			t.Errorf("%s has a report", c.Name)
		}
	}
	if want := map[string]string{"new": "not scanned", "odd": "no digest", "waiting": "not started"}; !mapsEqual(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}

	// --min-severity applies to each container's findings.
	if err := json.Unmarshal([]byte(mustPlugin(t, "why", "pod/"+webPod, "-n", shop, "--min-severity", "high", "-o", "json", "--server", s.URL, "--kubeconfig", kc)), &res); err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Containers {
		for _, f := range c.Report.Findings {
			if f.Severity != "critical" && f.Severity != "high" {
				t.Errorf("%s: %s is %s", c.Name, f.Id, f.Severity)
			}
		}
	}

	_, _, err := plugin(t, "why", "deployment/web", "-n", shop, "--server", s.URL, "--kubeconfig", kc)
	if err == nil || !strings.Contains(err.Error(), "want pod/NAME") {
		t.Fatalf("why deployment/web: %v", err)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// putWithKEV uploads f's BOM again as its digest's report, with a CISA KEV
// rating (as Grype's KEV decorator writes it) added to its first
// vulnerability not listed yet, and returns that vulnerability's id.
func (s *seeded) putWithKEV(t *testing.T, f fixture) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, f.File))
	if err != nil {
		t.Fatal(err)
	}
	var bom map[string]any
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatal(err)
	}
	vulns, _ := bom["vulnerabilities"].([]any)
	for _, v := range vulns {
		vuln, _ := v.(map[string]any)
		ratings, _ := vuln["ratings"].([]any)
		if strings.Contains(fmt.Sprint(ratings), "CISA KEV") {
			continue
		}
		vuln["ratings"] = append(ratings, map[string]any{"source": map[string]any{"name": "CISA KEV Catalog"}})
		if b, err = json.Marshal(bom); err != nil {
			t.Fatal(err)
		}
		s.putBOM(t, f.Digest, f.Image, b)
		return vuln["id"].(string)
	}
	t.Fatalf("%s has no vulnerability without a KEV rating", f.File)
	return ""
}
