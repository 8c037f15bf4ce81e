package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	authv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/api/scan"
	"github.com/crowsnest-dev/crowsnest/test/support/kubetest"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/apitest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/bomtest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/service"
)

// The matcher and scan namespaces and service accounts, as the chart names
// them.
const (
	matcherNS, matcherSA = "crowsnest-system", "crowsnest-matcher"
	scansNS, scanSA      = "scans", "crowsnest-scan"
)

// TestRematchScopeWithPodBoundTokens plays the matcher and an attacker
// against the write gate over HTTP, with Pod-bound tokens minted by a real
// kube-apiserver (TokenRequest with a Pod as bound object, as the kubelet
// mounts them) and a real Postgres:
//
//   - the matcher's Pod-bound token re-matches an existing report (it was
//     refused with 403 while any Pod-bound token was taken for a scan Pod);
//   - a scan Pod's token cannot use the rematch scope: it cannot replace
//     another digest's report;
//   - the rematch scope cannot create a report, and cannot change the
//     components of a stored SBOM, only its findings.
func TestRematchScopeWithPodBoundTokens(t *testing.T) {
	cfg := kubetest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k := &kube{t: t, ctx: ctx, c: kubernetes.NewForConfigOrDie(cfg)}
	k.serviceAccount(matcherNS, matcherSA)
	k.serviceAccount(scansNS, scanSA)
	dA, dB, dC := bomtest.Digest(0xa), bomtest.Digest(0xb), bomtest.Digest(0xc)
	matcherPod := k.pod(matcherNS, "matcher-0", matcherSA, nil)
	scanPod := k.pod(scansNS, "scan-a-x1", scanSA, k.scanJob("scan-a", dA))
	matcher := k.token(matcherNS, matcherSA, matcherPod)
	scanner := k.token(scansNS, scanSA, scanPod)
	scanUnbound := k.token(scansNS, scanSA, nil)

	reviewer, err := authn.New(cfg, authn.Options{Audience: scan.TokenAudience, Allowed: []string{scansNS + "/*"}})
	must(t, err)
	az, err := authz.New(k.c, authz.Options{RematchServiceAccounts: []string{matcherNS + "/" + matcherSA}, ScanServiceAccount: scanSA})
	must(t, err)
	srv := apitest.Start(t, func(c *service.Config) {
		c.Gate = &authz.Gate{Reviewer: reviewer, Authz: az, Audience: scan.TokenAudience}
	})
	scanned := bomtest.Random(7, 6)
	srv.PutReport(t, dA, bomtest.BOM(scanned...))
	srv.PutReport(t, dB, bomtest.BOM(scanned...))
	rematched := bomtest.BOM(renamed(scanned, "GHSA-")...) // same packages, other findings

	put := func(token, digest string, bom []byte) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/reports/"+digest, bytes.NewReader(bom))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/vnd.cyclonedx+json")
		resp, err := srv.Client().Do(req)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Logf("PUT %s: %d %s", digest[:12], resp.StatusCode, bytes.TrimSpace(body))
		return resp.StatusCode
	}
	expect := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s: HTTP %d, want %d", what, got, want)
		}
	}

	expect("matcher's Pod-bound token re-matches an existing report", put(matcher, dA, rematched), http.StatusOK)
	if got := summary(t, srv, dA); got.Cause != "rematch" || got.Findings != len(scanned) {
		t.Errorf("after the rematch: cause %q, %d findings; want rematch, %d", got.Cause, got.Findings, len(scanned))
	}

	expect("scan Pod's token replaces another digest's report", put(scanner, dB, rematched), http.StatusForbidden)
	expect("scan service account's unbound token replaces a report", put(scanUnbound, dB, rematched), http.StatusForbidden)
	if got := summary(t, srv, dB); got.Cause != "scan" {
		t.Errorf("%s was replaced by a scan token: cause %q", dB, got.Cause)
	}

	expect("matcher creates a report", put(matcher, dC, rematched), http.StatusForbidden)
	extra := append(renamed(scanned, "CVE-2099-"), bomtest.Vuln{ID: "CVE-2099-1", Severity: "low", Package: "implant", Version: "6.6.6"})
	expect("matcher adds a component", put(matcher, dA, bomtest.BOM(extra...)), http.StatusForbidden)
	fewer := renamed(scanned[1:], "CVE-2099-")
	if len(components(fewer)) < len(components(scanned)) {
		expect("matcher drops a component", put(matcher, dA, bomtest.BOM(fewer...)), http.StatusForbidden)
	}
	bumped := renamed(scanned, "CVE-2099-")
	bumped[0].Version += "-patched"
	expect("matcher changes a component's version", put(matcher, dA, bomtest.BOM(bumped...)), http.StatusForbidden)
	stored := map[string]bool{}
	for _, c := range bomComponents(t, srv, dA) {
		stored[c.Name+"@"+c.Version] = true
	}
	if want := components(scanned); !maps.Equal(stored, want) {
		t.Errorf("stored BOM of %s after the refused rematches lists %v, want %v", dA, stored, want)
	}
}

// renamed returns vulns with other ids: the same packages, other findings.
func renamed(vulns []bomtest.Vuln, prefix string) []bomtest.Vuln {
	out := make([]bomtest.Vuln, len(vulns))
	for i, v := range vulns {
		v.ID = prefix + v.ID
		out[i] = v
	}
	return out
}

func components(vulns []bomtest.Vuln) map[string]bool {
	m := map[string]bool{}
	for _, v := range vulns {
		m[v.Package+"@"+v.Version] = true
	}
	return m
}

type reportSummary struct {
	Cause    string `json:"cause"`
	Findings int    `json:"findingCount"`
}

func summary(t *testing.T, srv *apitest.Server, digest string) reportSummary {
	t.Helper()
	var s reportSummary
	must(t, json.Unmarshal(get(t, srv, "/api/v1/reports/"+digest+"?findingsLimit=1"), &s))
	return s
}

func bomComponents(t *testing.T, srv *apitest.Server, digest string) []cdx.Component {
	t.Helper()
	var bom cdx.BOM
	must(t, json.Unmarshal(get(t, srv, "/api/v1/reports/"+digest+"/bom"), &bom))
	if bom.Components == nil {
		return nil
	}
	return *bom.Components
}

func get(t *testing.T, srv *apitest.Server, path string) []byte {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d %s", path, resp.StatusCode, b)
	}
	return b
}

// kube makes the objects of a scan and of the matcher on a real API server
// (no controllers run: the test plays the Job controller and the kubelet).
type kube struct {
	t   *testing.T
	ctx context.Context
	c   kubernetes.Interface
}

func (k *kube) serviceAccount(ns, name string) {
	_, err := k.c.CoreV1().Namespaces().Create(k.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(k.t, err)
	_, err = k.c.CoreV1().ServiceAccounts(ns).Create(k.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(k.t, err)
}

// scanJob creates a running Job shaped like the operator's for digest.
func (k *kube) scanJob(name, digest string) *batchv1.Job {
	job, err := k.c.BatchV1().Jobs(scansNS).Create(k.ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{scan.LabelManagedBy: scan.ManagedBy, scan.LabelName: scan.AppName},
			Annotations: map[string]string{scan.AnnotationDigest: digest}},
		Spec: batchv1.JobSpec{BackoffLimit: ptr[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: scanSA,
			Containers: []corev1.Container{{Name: "uploader", Image: "uploader"}}}}},
	}, metav1.CreateOptions{})
	must(k.t, err)
	return job
}

// pod creates a running Pod of sa, controlled by owner when set.
func (k *kube) pod(ns, name, sa string, owner *batchv1.Job) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: sa,
			Containers: []corev1.Container{{Name: "main", Image: "main"}}}}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner.Name, UID: owner.UID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
	}
	pod, err := k.c.CoreV1().Pods(ns).Create(k.ctx, pod, metav1.CreateOptions{})
	must(k.t, err)
	pod.Status.Phase = corev1.PodRunning
	pod, err = k.c.CoreV1().Pods(ns).UpdateStatus(k.ctx, pod, metav1.UpdateOptions{})
	must(k.t, err)
	return pod
}

// token mints a token of ns/sa for results-api's audience, bound to pod
// when it is set, as the kubelet's projected volume is.
func (k *kube) token(ns, sa string, pod *corev1.Pod) string {
	spec := authv1.TokenRequestSpec{Audiences: []string{scan.TokenAudience}, ExpirationSeconds: ptr[int64](600)}
	if pod != nil {
		spec.BoundObjectRef = &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	tr, err := k.c.CoreV1().ServiceAccounts(ns).CreateToken(k.ctx, sa, &authv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	must(k.t, err)
	return tr.Status.Token
}
