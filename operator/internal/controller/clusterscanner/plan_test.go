package clusterscanner

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	crowsnestv1alpha1 "github.com/crowsnest-dev/crowsnest/operator/api/v1alpha1"
)

// Builders for the pure ClusterScanner tests: no API server.

var cscEpoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func testClusterScanner(name string, age time.Duration, mods ...func(*crowsnestv1alpha1.ClusterScanner)) *crowsnestv1alpha1.ClusterScanner {
	cs := &crowsnestv1alpha1.ClusterScanner{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name), Generation: 1, CreationTimestamp: metav1.NewTime(cscEpoch.Add(-age)),
	}}
	for _, m := range mods {
		m(cs)
	}
	return cs
}

func selecting(key, value string) func(*crowsnestv1alpha1.ClusterScanner) {
	return func(cs *crowsnestv1alpha1.ClusterScanner) {
		cs.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	}
}

func testNamespace(name string, labels map[string]string) corev1.Namespace {
	return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func namespaceNames(ss []*crowsnestv1alpha1.Scanner) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Namespace)
	}
	return out
}

func mustCoverage(t *testing.T, cs *crowsnestv1alpha1.ClusterScanner, operatorNS string) coverage {
	t.Helper()
	c, err := newCoverage(cs, operatorNS)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClusterScannerCoverage(t *testing.T) {
	team := map[string]string{"team": "a"}
	tests := []struct {
		name    string
		cs      *crowsnestv1alpha1.ClusterScanner
		covered []string
	}{
		{"no selector: every namespace but the defaults and the operator's", testClusterScanner("all", 0), []string{"apps", "other"}},
		{"empty selector is every namespace", testClusterScanner("empty", 0, func(cs *crowsnestv1alpha1.ClusterScanner) {
			cs.Spec.NamespaceSelector = &metav1.LabelSelector{}
		}), []string{"apps", "other"}},
		{"selector", testClusterScanner("sel", 0, selecting("team", "a")), []string{"apps"}},
		{"an explicit list replaces the defaults, operator namespace included", testClusterScanner("list", 0, func(cs *crowsnestv1alpha1.ClusterScanner) {
			cs.Spec.ExcludeNamespaces = []string{"other"}
		}), []string{"apps", "crowsnest-system", "kube-node-lease", "kube-public", "kube-system"}},
		{"an explicit empty list excludes nothing", testClusterScanner("none", 0, func(cs *crowsnestv1alpha1.ClusterScanner) {
			cs.Spec.ExcludeNamespaces = []string{}
		}), []string{"apps", "crowsnest-system", "kube-node-lease", "kube-public", "kube-system", "other"}},
	}
	namespaces := []corev1.Namespace{
		testNamespace("apps", team), testNamespace("crowsnest-system", team), testNamespace("kube-node-lease", team),
		testNamespace("kube-public", team), testNamespace("kube-system", team), testNamespace("other", nil),
	}
	gone := testNamespace("terminating", team)
	gone.DeletionTimestamp = ptr.To(metav1.NewTime(cscEpoch))
	namespaces = append(namespaces, gone)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCoverage(t, tt.cs, "crowsnest-system")
			var got []string
			for i := range namespaces {
				if c.covers(&namespaces[i]) {
					got = append(got, namespaces[i].Name)
				}
			}
			if !slices.Equal(got, tt.covered) {
				t.Errorf("covers %q, want %q", got, tt.covered)
			}
		})
	}
}

// An invalid selector (the CRD's rule cannot catch a bad label key) covers
// nothing and is reported, Stalled, without a plan.
func TestClusterScannerInvalidSelector(t *testing.T) {
	cs := testClusterScanner("bad", 0, selecting("not a key!", "x"))
	_, err := newCoverage(cs, "")
	if err == nil {
		t.Fatal("invalid selector accepted")
	}
	setClusterScannerStatus(cs, clusterOutcome{invalid: err})
	ready := meta.FindStatusCondition(cs.Status.Conditions, crowsnestv1alpha1.ConditionReady)
	stalled := meta.FindStatusCondition(cs.Status.Conditions, crowsnestv1alpha1.ConditionStalled)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != crowsnestv1alpha1.ReasonInvalidSelector ||
		stalled == nil || stalled.Status != metav1.ConditionTrue {
		t.Errorf("conditions %+v, want Ready=False/InvalidSelector and Stalled=True", cs.Status.Conditions)
	}
}

func TestClusterScannerPlan(t *testing.T) {
	team := map[string]string{"team": "a"}
	self := testClusterScanner("fleet", time.Hour, selecting("team", "a"))
	olderOne := testClusterScanner("legacy", 2*time.Hour, selecting("legacy", "yes"))
	sameAgeSmaller := testClusterScanner("aaa", time.Hour, selecting("shared", "yes"))
	generated := func(cs *crowsnestv1alpha1.ClusterScanner, ns string, mods ...func(*crowsnestv1alpha1.Scanner)) *crowsnestv1alpha1.Scanner {
		s := generatedScanner(cs, ns)
		for _, m := range mods {
			m(s)
		}
		return s
	}
	user := func(ns, name string) *crowsnestv1alpha1.Scanner {
		return &crowsnestv1alpha1.Scanner{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	managedSA := func(ns string) *corev1.ServiceAccount { return scanServiceAccount(self, "crowsnest-scan", ns) }

	obs := &clusterObserved{
		self: self, serviceAccount: "crowsnest-scan",
		others: []coverage{mustCoverage(t, olderOne, ""), mustCoverage(t, sameAgeSmaller, "")},
		namespaces: []corev1.Namespace{
			testNamespace("new", team),     // nothing yet: create both
			testNamespace("done", team),    // up to date
			testNamespace("drifted", team), // someone edited the generated Scanner
			testNamespace("own", team),     // a Scanner of its own overrides
			testNamespace("clash", team),   // a Scanner of its own with our name
			testNamespace("left", nil),     // no longer selected: remove both
			testNamespace("legacy", map[string]string{"team": "a", "legacy": "yes"}), // an older ClusterScanner wins
			testNamespace("tie", map[string]string{"team": "a", "shared": "yes"}),    // as old, smaller name wins
			testNamespace("theirs", map[string]string{"legacy": "yes"}),              // not ours; the ServiceAccount stays
			testNamespace("unclaimed", nil),                                          // nobody covers it: the operator's ServiceAccount goes
			testNamespace("handmade", team),                                          // a ServiceAccount the operator did not make
		},
		scanners: map[string][]*crowsnestv1alpha1.Scanner{
			"done":    {generated(self, "done")},
			"drifted": {generated(self, "drifted", func(s *crowsnestv1alpha1.Scanner) { s.Spec.MaxConcurrentScans = 9 })},
			"own":     {user("own", "mine"), generated(self, "own")},
			"clash":   {user("clash", "fleet")},
			"left":    {generated(self, "left")},
			"legacy":  {generated(olderOne, "legacy"), generated(self, "legacy")},
		},
		serviceAccounts: map[string]*corev1.ServiceAccount{
			"done": managedSA("done"), "drifted": managedSA("drifted"), "own": managedSA("own"), "left": managedSA("left"),
			"theirs": managedSA("theirs"), "unclaimed": managedSA("unclaimed"),
		},
		foreignServiceAccounts: map[string]bool{"handmade": true},
	}
	p := planClusterScanner(obs, mustCoverage(t, self, ""))

	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s in %q, want %q", what, got, want)
		}
	}
	check("created Scanners", namespaceNames(p.createScanners), []string{"new", "handmade"})
	var updated []string
	for _, u := range p.updateScanners {
		updated = append(updated, u.want.Namespace)
		if u.want.Spec.MaxConcurrentScans != 0 || u.have.Spec.MaxConcurrentScans != 9 {
			t.Errorf("update of %s: want the template's spec on a copy, got have %+v want %+v", u.want.Namespace, u.have.Spec, u.want.Spec)
		}
	}
	check("updated Scanners", updated, []string{"drifted"})
	check("deleted Scanners", namespaceNames(p.deleteScanners), []string{"own", "left", "legacy"})
	check("kept Scanners", namespaceNames(p.generated), []string{"done", "drifted"})
	check("created ServiceAccounts", p.createSAs, []string{"new", "clash"})
	var deletedSAs []string
	for _, sa := range p.deleteSAs {
		deletedSAs = append(deletedSAs, sa.Namespace)
	}
	check("deleted ServiceAccounts", deletedSAs, []string{"left", "unclaimed"})
	if p.covered != 6 || p.overridden != 2 || p.conflicting != 2 {
		t.Errorf("covered %d, overridden %d, conflicting %d; want 6, 2, 2", p.covered, p.overridden, p.conflicting)
	}
	check("older owners", p.olderOwners, []string{"aaa", "legacy"})

	for _, s := range p.createScanners {
		ref := metav1.GetControllerOf(s)
		if ref == nil || ref.UID != self.UID || s.Labels[crowsnestv1alpha1.LabelClusterScanner] != self.Name || s.Name != self.Name {
			t.Errorf("generated Scanner %s/%s: owner %+v, labels %v", s.Namespace, s.Name, ref, s.Labels)
		}
	}
	sa := scanServiceAccount(self, "crowsnest-scan", "new")
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken || metav1.GetControllerOf(sa) != nil || len(sa.OwnerReferences) != 1 {
		t.Errorf("scan ServiceAccount %+v: want no API token and a non-controller owner reference", sa)
	}
}

// Without a scan ServiceAccount name nothing is done to ServiceAccounts.
func TestClusterScannerPlanWithoutServiceAccount(t *testing.T) {
	self := testClusterScanner("fleet", 0)
	p := planClusterScanner(&clusterObserved{self: self, namespaces: []corev1.Namespace{testNamespace("apps", nil)}}, mustCoverage(t, self, ""))
	if len(p.createSAs) != 0 || len(p.deleteSAs) != 0 || len(p.createScanners) != 1 {
		t.Errorf("plan %+v: want one Scanner and no ServiceAccount", p)
	}
}

func TestClusterScannerStatusSumsAndBoundsWorst(t *testing.T) {
	cs := testClusterScanner("fleet", 0)
	p := &clusterPlan{covered: 15, overridden: 1, conflicting: 2, olderOwners: []string{"a", "b", "c", "d", "e", "f", "g"}}
	for i := range 15 {
		s := generatedScanner(cs, fmt.Sprintf("ns-%02d", i))
		// Failed 0..4 (three each), queued i: ns-00 has neither.
		s.Status = crowsnestv1alpha1.ScannerStatus{Images: 10, Scanned: 5, Scanning: 1, Failed: int32(i / 3), Queued: int32(i)}
		p.generated = append(p.generated, s)
	}
	setClusterScannerStatus(cs, clusterOutcome{plan: p})
	st := cs.Status
	if st.Namespaces != 15 || st.Overridden != 1 || st.Conflicting != 2 || st.Images != 150 || st.Scanned != 75 ||
		st.Scanning != 15 || st.Failed != 30 || st.Queued != 105 {
		t.Errorf("counts %+v", st)
	}
	want := []string{"ns-14", "ns-13", "ns-12", "ns-11", "ns-10", "ns-09", "ns-08", "ns-07", "ns-06", "ns-05"}
	var got []string
	for _, w := range st.WorstNamespaces {
		got = append(got, w.Namespace)
	}
	if !slices.Equal(got, want) {
		t.Errorf("worst namespaces %q, want %q", got, want)
	}
	conflict := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionConflicting)
	if conflict == nil || conflict.Status != metav1.ConditionTrue || conflict.Message !=
		"2 selected namespaces are left to an older ClusterScanner (it generates their Scanners): a, b, c, d, e and 2 more" {
		t.Errorf("Conflicting = %+v", conflict)
	}
	if ready := meta.FindStatusCondition(st.Conditions, crowsnestv1alpha1.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", ready)
	}
}

func TestOlder(t *testing.T) {
	a, b := testClusterScanner("a", time.Hour), testClusterScanner("b", 2*time.Hour)
	if !older(b, a) || older(a, b) {
		t.Error("the older ClusterScanner must win")
	}
	c := testClusterScanner("c", time.Hour)
	if !older(a, c) || older(c, a) {
		t.Error("at the same age, the smaller name must win")
	}
}
