package e2echart

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"
)

// helmTest runs `helm test` against the install: the chart's test Pod
// probes results-api and the operator through their Services.
func helmTest(ctx context.Context, t *testing.T) {
	t.Helper()
	start := time.Now()
	out, err := tool(ctx, t, "helm", "test", release, "-n", namespace, "--timeout=3m")
	if err != nil {
		t.Errorf("helm test: %v", err)
		return
	}
	t.Logf("helm test passed in %s:\n%s", time.Since(start).Round(time.Millisecond), firstLines(out, 12))
}

// chartSelectors find what the chart made (its labels) and what the
// operator made for it (scan Jobs and their Pods, Scanners' children).
var chartSelectors = []string{
	"app.kubernetes.io/instance=" + release,
	"app.kubernetes.io/part-of=crowsnest",
	"app.kubernetes.io/managed-by=crowsnest-operator",
}

// uninstall runs `helm uninstall --wait`, deletes the CRDs (helm keeps
// them by design: docs/deploy.md) and returns every object of every
// listable type, in every namespace and cluster-wide, that still carries
// one of chartSelectors a minute later (the garbage collector deletes the
// StatefulSets' claims after them), as kind/name lines.
func uninstall(ctx context.Context, t *testing.T) []string {
	t.Helper()
	if _, err := tool(ctx, t, "helm", "uninstall", release, "-n", namespace, "--wait", "--timeout=3m"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	if _, err := tool(ctx, t, "kubectl", "delete", "crd", "scanners.crowsnest.dev", "clusterscanners.crowsnest.dev",
		"vulnerabilityexceptions.crowsnest.dev", "clustervulnerabilityexceptions.crowsnest.dev",
		"vexdocuments.crowsnest.dev", "clustervexdocuments.crowsnest.dev", "--wait=true", "--timeout=2m"); err != nil {
		t.Errorf("delete the CRDs: %v", err)
	}
	kinds := listableKinds(ctx, t)
	deadline := time.Now().Add(time.Minute)
	for {
		left := leftovers(ctx, t, kinds, chartSelectors)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(2 * time.Second)
	}
}

// listableKinds are the API server's resource types that can be listed,
// but events (they name the objects they are about; they are not theirs).
func listableKinds(ctx context.Context, t *testing.T) []string {
	t.Helper()
	types, err := tool(ctx, t, "kubectl", "api-resources", "--verbs=list", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range strings.Fields(types) {
		if k != "events" && k != "events.events.k8s.io" {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// leftovers lists, as kind/name lines, every object of kinds in every
// namespace and cluster-wide that carries one of selectors.
func leftovers(ctx context.Context, t *testing.T, kinds, selectors []string) []string {
	left := map[string]bool{}
	for _, sel := range selectors {
		out, err := tool(ctx, t, "kubectl", "get", strings.Join(kinds, ","), "-A", "-l", sel, "-o", "name", "--ignore-not-found")
		if err != nil {
			t.Errorf("list what is left (%s): %v", sel, err)
			continue
		}
		for _, line := range strings.Fields(out) {
			left[line] = true
		}
	}
	var out []string
	for k := range left {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
