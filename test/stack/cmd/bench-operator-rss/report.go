package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// section is one scenario's part of the report, in Markdown.
type section struct {
	Title string
	strings.Builder
}

func (s *section) linef(format string, args ...any) {
	fmt.Fprintf(s, format+"\n", args...)
}

// report gathers the sections under a header that states the conditions.
type report struct {
	o        Options
	started  time.Time
	sections []*section
	errs     []string
}

func newReport(o Options) *report { return &report{o: o, started: time.Now()} }

func (r *report) add(s *section) { r.sections = append(r.sections, s) }

func (r *report) addError(name string, err error) {
	r.errs = append(r.errs, fmt.Sprintf("- **%s failed**: %s", name, strings.ReplaceAll(err.Error(), "\n", " ")))
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Operator as a separate process (bench-operator-rss)\n\n")
	fmt.Fprintf(&b, "- run: %s, %s\n", r.started.UTC().Format(time.RFC3339), time.Since(r.started).Round(time.Second))
	fmt.Fprintf(&b, "- tree: %s\n", gitState(r.o.Root))
	fmt.Fprintf(&b, "- machine: %d CPUs (%s), %s, %s; shared with other work, so timings and CPU are noisy\n",
		runtime.NumCPU(), cpuModel(), memTotal(), runtime.Version())
	fmt.Fprintf(&b, "- cluster: envtest kube-apiserver + etcd on loopback, no kubelet, no Job controller: the harness writes Pod status "+
		"and plays every scan Job (uploads a small CycloneDX report to results-api, then marks the Job succeeded)\n")
	fmt.Fprintf(&b, "- results-api: the current tree's binary on a throwaway Postgres; operator flags: defaults plus metrics/probe on loopback")
	if r.o.GoMemLimit != "" {
		fmt.Fprintf(&b, ", GOMEMLIMIT=%s", r.o.GoMemLimit)
	} else {
		fmt.Fprintf(&b, ", no GOMEMLIMIT")
	}
	fmt.Fprintf(&b, "\n- memory is VmRSS from /proc/<pid>/status sampled every second; CPU is utime+stime from /proc/<pid>/stat; heap and counters from the operator's /metrics\n\n")
	for _, e := range r.errs {
		b.WriteString(e + "\n")
	}
	if len(r.errs) > 0 {
		b.WriteString("\n")
	}
	for _, s := range r.sections {
		fmt.Fprintf(&b, "## %s\n\n%s\n", s.Title, s.String())
	}
	return b.String()
}

func gitState(root string) string {
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	dirty, _ := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "operator").Output()
	state := "clean operator/"
	if len(strings.TrimSpace(string(dirty))) > 0 {
		state = fmt.Sprintf("operator/ has %d modified files (work in progress)", len(strings.Split(strings.TrimSpace(string(dirty)), "\n")))
	}
	return fmt.Sprintf("HEAD %s, %s", strings.TrimSpace(string(head)), state)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? RAM"
	}
	kb, err := statusField(string(b), "MemTotal")
	if err != nil {
		return "? RAM"
	}
	return fmt.Sprintf("%.0f GiB RAM", float64(kb)/(1<<30))
}

// mib formats bytes as MiB with one decimal.
func mib(v float64) string { return fmt.Sprintf("%.1f", v/(1<<20)) }

func mibi(v int64) string { return mib(float64(v)) }

// ratio formats new/old.
func ratio(newV, oldV float64) string {
	if oldV == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", newV/oldV)
}

func dur(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
