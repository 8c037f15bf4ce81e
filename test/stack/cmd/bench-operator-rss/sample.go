package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sample is one reading of the process: resident memory and CPU time.
type sample struct {
	At  time.Time
	RSS int64   // VmRSS, bytes
	CPU float64 // utime+stime, seconds
}

// sampler reads /proc/<pid>/status and /proc/<pid>/stat every second
// until the process ends.
type sampler struct {
	pid int
	mu  sync.Mutex
	all []sample
	hwm int64 // VmHWM at the last reading
}

func startSampler(pid int, done <-chan struct{}) *sampler {
	s := &sampler{pid: pid}
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			s.read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) read() {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		return
	}
	rss, err1 := statusField(string(status), "VmRSS")
	hwm, err2 := statusField(string(status), "VmHWM")
	cpu, err3 := cpuSeconds(string(stat))
	if err1 != nil || err2 != nil || err3 != nil {
		return
	}
	s.mu.Lock()
	s.all = append(s.all, sample{At: time.Now(), RSS: rss, CPU: cpu})
	s.hwm = hwm
	s.mu.Unlock()
}

// Now takes a reading at once and returns it.
func (s *sampler) Now() sample {
	s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) == 0 {
		return sample{}
	}
	return s.all[len(s.all)-1]
}

// Between returns the samples taken in [from, to].
func (s *sampler) Between(from, to time.Time) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for _, x := range s.all {
		if !x.At.Before(from) && !x.At.After(to) {
			out = append(out, x)
		}
	}
	return out
}

// Peak returns the kernel's high-water mark (VmHWM, authoritative) and the
// highest VmRSS sampled.
func (s *sampler) Peak() (hwm, sampled int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.all {
		sampled = max(sampled, x.RSS)
	}
	return s.hwm, sampled
}

// statusField reads a "kB" field of /proc/<pid>/status, in bytes.
func statusField(status, field string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in status", field)
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux this runs on (sysconf(_SC_CLK_TCK) without cgo).
const clockTicks = 100

// cpuSeconds returns utime+stime from /proc/<pid>/stat. The command name
// (field 2) may hold spaces and parentheses, so fields are counted from
// the last ')'.
func cpuSeconds(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat has %d fields after the name", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat utime %q stime %q", f[11], f[12])
	}
	return float64(utime+stime) / clockTicks, nil
}

// medianRSS is the median VmRSS of samples, in bytes (0 without any).
func medianRSS(xs []sample) int64 {
	if len(xs) == 0 {
		return 0
	}
	v := make([]int64, len(xs))
	for i, x := range xs {
		v[i] = x.RSS
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// maxRSS is the highest VmRSS of samples.
func maxRSS(xs []sample) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x.RSS)
	}
	return m
}

// percentile returns the p-th percentile (nearest rank) of d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(p/100*float64(len(s))))-1)]
}

// metrics is a parsed Prometheus text exposition: one entry per series.
type metrics []series

type series struct {
	Name, Labels string // Labels: the text between the braces
	Value        float64
}

// parseMetrics reads the text format (no timestamps, as client_golang
// writes it).
func parseMetrics(r io.Reader) (metrics, error) {
	var out metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		var s series
		var rest string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("malformed series %q", line)
			}
			s.Name, s.Labels, rest = line[:i], line[i+1:j], line[j+1:]
		} else {
			s.Name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", line, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// Sum adds the series named name whose labels contain every one of the
// given `key="value"` pairs.
func (m metrics) Sum(name string, labels ...string) float64 {
	var total float64
next:
	for _, s := range m {
		if s.Name != name {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(s.Labels, l) {
				continue next
			}
		}
		total += s.Value
	}
	return total
}
