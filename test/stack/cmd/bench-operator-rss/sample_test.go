package main

import (
	"strings"
	"testing"
	"time"
)

func TestStatusField(t *testing.T) {
	status := "Name:\toperator\nVmHWM:\t  131072 kB\nVmRSS:\t   65536 kB\nThreads:\t12\n"
	for field, want := range map[string]int64{"VmRSS": 64 << 20, "VmHWM": 128 << 20} {
		got, err := statusField(status, field)
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", field, got, err, want)
		}
	}
	if _, err := statusField(status, "VmSwap"); err == nil {
		t.Error("missing field: no error")
	}
}

func TestCPUSeconds(t *testing.T) {
	// The command name may hold spaces and parentheses; utime and stime
	// are fields 14 and 15 (here 250 and 50 ticks).
	stat := "4242 (op (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 800000000 16000 18446744073709551615"
	got, err := cpuSeconds(stat)
	if err != nil || got != 3.0 {
		t.Fatalf("cpuSeconds = %v, %v; want 3", got, err)
	}
	if _, err := cpuSeconds("4242 (op) S 1"); err == nil {
		t.Error("short stat: no error")
	}
}

func TestMedianAndMax(t *testing.T) {
	xs := []sample{{RSS: 30}, {RSS: 10}, {RSS: 20}, {RSS: 100}}
	if got := medianRSS(xs); got != 25 {
		t.Errorf("median of 4 = %d, want 25", got)
	}
	if got := medianRSS(xs[:3]); got != 20 {
		t.Errorf("median of 3 = %d, want 20", got)
	}
	if got := maxRSS(xs); got != 100 {
		t.Errorf("max = %d", got)
	}
	if medianRSS(nil) != 0 || medianFloat(nil) != 0 {
		t.Error("median of nothing is not 0")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 50; i++ {
		d = append(d, time.Duration(51-i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 25 * time.Millisecond, 99: 50 * time.Millisecond, 100: 50 * time.Millisecond} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if percentile(nil, 99) != 0 {
		t.Error("p99 of nothing is not 0")
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="scanner",result="success"} 12
controller_runtime_reconcile_total{controller="scanner",result="requeue_after"} 3
controller_runtime_reconcile_total{controller="clusterscanner",result="success"} 1
go_memstats_heap_inuse_bytes 4.194304e+07
crowsnest_operator_timed_requeues_total{why="retry{x}"} 2
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"controller_runtime_reconcile_total", nil, 16},
		{"controller_runtime_reconcile_total", []string{`controller="scanner"`}, 15},
		{"controller_runtime_reconcile_total", []string{`controller="scanner"`, `result="success"`}, 12},
		{"go_memstats_heap_inuse_bytes", nil, 40 << 20},
		{"crowsnest_operator_timed_requeues_total", nil, 2},
		{"absent", nil, 0},
	} {
		if got := m.Sum(c.name, c.labels...); got != c.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, err := parseMetrics(strings.NewReader("broken_metric{a=\"b\"}\n")); err == nil {
		t.Error("series without value: no error")
	}
}

func TestFlagLine(t *testing.T) {
	help := `Usage of operator:
  -max-concurrent-scans int
    	scan Jobs running at once (default 10)
  -metrics-secure
    	serve metrics over HTTPS (default true)
  -results-api-url string
    	base URL of results-api
`
	var got []string
	for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != "max-concurrent-scans,metrics-secure,results-api-url" {
		t.Errorf("flags = %v", got)
	}
}
