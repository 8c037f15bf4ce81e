package e2e

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
)

const webPod = "web-7c9d8f6b5d-x2x7q"

// TestImagesNamespace: `images -n NS` lists exactly the images the Pods of
// NS run (results-api filters by namespace from the operator's inventory,
// published here from the Pods), worst first, with the counts of the real
// reports and the owning workload.
func TestImagesNamespace(t *testing.T) {
	s := startSeeded(t)
	shop, jobs := workloads(t, s.fx)
	s.reportInventory(t, shop)
	s.reportInventory(t, jobs)
	kc := kubeconfig(t, nil)

	header, rows := table(t, mustPlugin(t, "images", "-n", shop, "--server", s.URL, "--kubeconfig", kc))
	want := []string{"IMAGE", "DIGEST", "CRITICAL", "HIGH", "MEDIUM", "LOW", "FIXABLE", "WORKLOADS", "SCANNED"}
	if !slices.Equal(header, want) {
		t.Fatalf("header %v, want %v", header, want)
	}
	// debian (2 critical, 4 high) before alpine (2, 2) before gobinary (1);
	// node runs in the other namespace, clean nowhere.
	if got := col(t, header, rows, "IMAGE"); !slices.Equal(got, []string{"crowsnest.dev/demo/debian", "crowsnest.dev/demo/alpine", "crowsnest.dev/demo/gobinary"}) {
		t.Fatalf("images %v", got)
	}
	for i, name := range []string{"debian", "alpine", "gobinary"} {
		f, row := s.fx[name], rows[i]
		wantRow := []string{strings.TrimPrefix(f.Digest, "sha256:")[:12], strconv.Itoa(f.Counts["critical"]), strconv.Itoa(f.Counts["high"]),
			strconv.Itoa(f.Counts["medium"]), strconv.Itoa(f.Counts["low"]), strconv.Itoa(f.Fixable), "deployment/web"}
		if !slices.Equal(row[1:8], wantRow) {
			t.Errorf("%s row %v, want %v", name, row[1:8], wantRow)
		}
	}

	// -o json: the same three, each with where it runs.
	var list resultsapi.ReportList
	if err := json.Unmarshal([]byte(mustPlugin(t, "images", "-n", jobs, "-o", "json", "--server", s.URL, "--kubeconfig", kc)), &list); err != nil {
		t.Fatal(err)
	}
	if list.Total != 1 || len(list.Items) != 1 || list.Items[0].Digest != s.fx["node"].Digest || list.Items[0].Findings != s.fx["node"].Findings {
		t.Fatalf("jobs namespace: %+v", list)
	}
	if ws := *list.Items[0].RunningIn; len(ws) != 1 || ws[0].Namespace != jobs || ws[0].Kind != "Pod" || ws[0].Name != "batch" ||
		ws[0].Pods != 1 || !slices.Equal(ws[0].Containers, []string{"main"}) {
		t.Fatalf("runningIn %+v", ws)
	}

	// An empty namespace says so on stderr and prints no table.
	empty := namespace(t, "empty")
	out, errOut, err := plugin(t, "images", "-n", empty, "--server", s.URL, "--kubeconfig", kc)
	if err != nil || out != "" || !strings.Contains(errOut, "No scanned images found in namespace "+empty) {
		t.Fatalf("empty namespace: out %q, stderr %q, err %v", out, errOut, err)
	}
}

// TestImagesAllNamespaces: -A lists every report; --min-severity and
// --fixable filter on the server; -o yaml and -o wide carry everything.
func TestImagesAllNamespaces(t *testing.T) {
	s := startSeeded(t)
	shop, _ := workloads(t, s.fx)
	s.reportInventory(t, shop) // jobs' inventory is not reported: node runs nowhere results-api knows of

	header, rows := table(t, mustPlugin(t, "images", "-A", "--server", s.URL))
	if len(rows) != 5 {
		t.Fatalf("%d rows, want the 5 reports:\n%v", len(rows), rows)
	}
	images := col(t, header, rows, "IMAGE")
	if images[4] != "crowsnest.dev/demo/clean" || images[0] != "crowsnest.dev/demo/debian" {
		t.Fatalf("order %v: want worst (debian) first, clean last", images)
	}
	wantWorkloads := map[string]string{"debian": shop + "/deployment/web", "alpine": shop + "/deployment/web", "gobinary": shop + "/deployment/web",
		"node": "<not running>", "clean": "<not running>"}
	for i, w := range col(t, header, rows, "WORKLOADS") {
		name := strings.TrimPrefix(images[i], "crowsnest.dev/demo/")
		if w != wantWorkloads[name] {
			t.Errorf("%s: WORKLOADS %q, want %q", name, w, wantWorkloads[name])
		}
	}

	var list resultsapi.ReportList
	if err := yaml.Unmarshal([]byte(mustPlugin(t, "images", "-A", "--min-severity", "high", "-o", "yaml", "--server", s.URL)), &list); err != nil {
		t.Fatal(err)
	}
	if list.Total != 4 {
		t.Fatalf("--min-severity high: %d images, want 4 (all but clean)", list.Total)
	}
	for _, it := range list.Items {
		f := s.fx[strings.TrimPrefix(repository(it.Image), "crowsnest.dev/demo/")]
		if it.Digest != f.Digest || it.Findings != f.Findings || it.Counts.Critical != f.Counts["critical"] || it.Counts.Negligible != f.Counts["negligible"] {
			t.Errorf("%s: %+v, want %+v", it.Image, it, f)
		}
	}

	header, rows = table(t, mustPlugin(t, "images", "-A", "-o", "wide", "--fixable", "--server", s.URL))
	if len(rows) != 4 {
		t.Fatalf("--fixable: %d rows, want 4", len(rows))
	}
	if got := col(t, header, rows, "DIGEST"); got[0] != s.fx["debian"].Digest {
		t.Fatalf("wide shows the full digest: %v", got)
	}
	if got := col(t, header, rows, "NEGLIGIBLE"); got[0] != "2" {
		t.Fatalf("debian NEGLIGIBLE %q, want 2", got[0])
	}
}

func repository(image string) string { r, _, _ := strings.Cut(image, "@"); return r }

// TestImage: one report with every finding, by digest, by repo@digest and
// by pod/NAME -c CONTAINER; a Pod with several containers asks which.
func TestImage(t *testing.T) {
	s := startSeeded(t)
	shop, _ := workloads(t, s.fx)
	kc := kubeconfig(t, nil)
	alpine := s.fx["alpine"]

	out := mustPlugin(t, "image", alpine.Digest, "--server", s.URL)
	head, findings, ok := strings.Cut(out, "\n\n")
	if !ok {
		t.Fatalf("no findings table:\n%s", out)
	}
	for _, want := range []string{"Image:     " + alpine.Image, "Digest:    " + alpine.Digest, "Findings:  22 (2 critical, 2 high, 18 medium), 22 fixable", "Grype 0.121.2"} {
		if !strings.Contains(head, want) {
			t.Errorf("header lacks %q:\n%s", want, head)
		}
	}
	header, rows := table(t, findings)
	if len(rows) != alpine.Findings {
		t.Fatalf("%d finding rows, want %d", len(rows), alpine.Findings)
	}
	ids := map[string]bool{}
	for _, id := range col(t, header, rows, "ID") {
		ids[id] = true
	}
	for _, id := range alpine.IDs {
		if !ids[id] {
			t.Errorf("finding %s missing", id)
		}
	}
	if sev := col(t, header, rows, "SEVERITY"); sev[0] != "critical" || sev[len(sev)-1] != "medium" {
		t.Errorf("severities %v: want worst first", sev)
	}

	// --min-severity critical keeps CVE-2024-5535 in libcrypto3 and libssl3.
	var rep resultsapi.ReportDetail
	if err := json.Unmarshal([]byte(mustPlugin(t, "image", alpine.Image, "--min-severity", "critical", "-o", "json", "--server", s.URL)), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FindingCount != 22 || len(rep.Findings) != 2 || rep.Findings[0].Id != "CVE-2024-5535" || rep.Findings[1].Id != "CVE-2024-5535" {
		t.Fatalf("critical findings %+v (count %d)", rep.Findings, rep.FindingCount)
	}

	// pod/NAME: the Pod's status says which digest its container runs.
	if err := json.Unmarshal([]byte(mustPlugin(t, "image", "pod/"+webPod, "-n", shop, "-c", "sidecar", "-o", "json", "--server", s.URL, "--kubeconfig", kc)), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Digest != s.fx["gobinary"].Digest || len(rep.Findings) != 6 {
		t.Fatalf("pod/%s -c sidecar: %s with %d findings, want gobinary's 6", webPod, rep.Digest, len(rep.Findings))
	}
	_, _, err := plugin(t, "image", "pod/"+webPod, "-n", shop, "--server", s.URL, "--kubeconfig", kc)
	if err == nil || !strings.Contains(err.Error(), "has 2 containers (app, sidecar): choose one with -c") {
		t.Fatalf("several containers: %v", err)
	}
	_, _, err = plugin(t, "image", "pod/pending", "-n", shop, "--server", s.URL, "--kubeconfig", kc)
	if err == nil || !strings.Contains(err.Error(), "reports an image digest yet (not started)") {
		t.Fatalf("not started: %v", err)
	}
	_, _, err = plugin(t, "image", "pod/nope", "-n", shop, "--server", s.URL, "--kubeconfig", kc)
	if err == nil || !strings.Contains(err.Error(), "pod nope not found in namespace "+shop) {
		t.Fatalf("missing pod: %v", err)
	}
}

// TestImageErrors: bad input and a digest results-api has no report for.
func TestImageErrors(t *testing.T) {
	s := startSeeded(t)
	for arg, want := range map[string]string{
		"nginx:latest":       "is neither an image digest",
		"sha256:ABC":         "is neither an image digest",
		"pod/":               "is neither an image digest",
		"sha256:" + zeros(1): "no report for sha256:" + zeros(1) + ": not scanned yet, or your credentials cannot read it",
	} {
		_, _, err := plugin(t, "image", arg, "--server", s.URL)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("image %s: %v, want %q", arg, err, want)
		}
	}
	for _, args := range [][]string{{"images", "-A", "-o", "xml"}, {"images", "-A", "--min-severity", "severe"}, {"changes", "--since", "yesterday"}, {"changes", "--since", "-1h"}} {
		_, _, err := plugin(t, append(args, "--server", s.URL)...)
		if err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func zeros(n int) string { return strings.Repeat("0", 63) + strconv.Itoa(n) }
