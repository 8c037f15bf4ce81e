package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// TestLayout pins the scenarios' workloads: the digest count, and how
// many namespaces run each digest (what makes a per-Scanner Job a
// duplicate).
func TestLayout(t *testing.T) {
	var o Options
	for _, c := range []struct {
		scenario             string
		running, nsPerDigest int
	}{
		{"10k", 500, 1},
		{"100k", 5000, 40},
		{"per-namespace", 5000, 8},
		{"smoke-100k", 40, 8},
		{"smoke-per-namespace", 20, 10},
	} {
		l := layout{o.scenarioSize(c.scenario)}
		if got := l.running(); got != c.running {
			t.Errorf("%s: %d digests running, want %d", c.scenario, got, c.running)
		}
		if got := l.namespacesPerDigest(); got != c.nsPerDigest {
			t.Errorf("%s: each digest in %d namespaces, want %d", c.scenario, got, c.nsPerDigest)
		}
		// Count for real: the namespaces each digest runs in, and the
		// namespaces used.
		nsOf := map[int]map[string]bool{}
		used := map[string]bool{}
		for i := range l.Pods {
			a, b := l.digests(i)
			for _, d := range []int{a, b} {
				if nsOf[d] == nil {
					nsOf[d] = map[string]bool{}
				}
				nsOf[d][l.namespace(i)] = true
			}
			used[l.namespace(i)] = true
		}
		if len(nsOf) != c.running || len(used) != l.Namespaces {
			t.Errorf("%s: pods run %d digests in %d namespaces, want %d in %d", c.scenario, len(nsOf), len(used), c.running, l.Namespaces)
		}
		for d, nss := range nsOf {
			if len(nss) != c.nsPerDigest {
				t.Errorf("%s: digest %d runs in %d namespaces, want %d", c.scenario, d, len(nss), c.nsPerDigest)
				break
			}
		}
		for ns := range used {
			if !strings.HasPrefix(ns, "bench-") || len(ns) != len("bench-0000") {
				t.Errorf("%s: namespace %q", c.scenario, ns)
			}
		}
	}
}

func TestCheckJobs(t *testing.T) {
	if err := checkJobs(jobCounts{Created: 3, Digests: 3}, 3); err != nil {
		t.Errorf("one Job per digest: %v", err)
	}
	for name, j := range map[string]jobCounts{
		"duplicate": {Created: 4, Digests: 3, Duplicates: []string{"ns/j: sha256:1"}},
		"missing":   {Created: 2, Digests: 2},
		"failed":    {Created: 3, Digests: 3, Errors: []error{errors.New("upload refused")}},
	} {
		if err := checkJobs(j, 3); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestSetSucceeded pins the status the API server (1.31+) accepts on a
// succeeded Job: SuccessCriteriaMet before Complete, with both times.
func TestSetSucceeded(t *testing.T) {
	var job batchv1.Job
	setSucceeded(&job)
	st := job.Status
	if st.StartTime == nil || st.CompletionTime == nil || st.StartTime.After(st.CompletionTime.Time) || st.Succeeded != 1 {
		t.Fatalf("status %+v", st)
	}
	if len(st.Conditions) != 2 || st.Conditions[0].Type != batchv1.JobSuccessCriteriaMet || st.Conditions[1].Type != batchv1.JobComplete {
		t.Fatalf("conditions %+v", st.Conditions)
	}
	if !isFinished(&job) {
		t.Error("a succeeded Job is not finished")
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario=1m"},
		{"--scanner-mode=both"},
		{"--digests=501"},
		{"--max-concurrent-scans=51"},
	} {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := o.Complete(); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--scenario=100k, per-namespace", "--pods=1000"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Scenarios, ",") != "100k,per-namespace" || o.scenarioSize("100k").Pods != 1000 || o.scenarioSize("smoke-100k").Pods != 200 {
		t.Errorf("options %+v", o)
	}
}
