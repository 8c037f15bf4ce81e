package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestSet: the chart's variable wins over the cgroup file, GOMEMLIMIT over
// both, and garbage is refused with the variable named.
func TestSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	dir := t.TempDir()
	cgroup := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(cgroup, []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	max := filepath.Join(dir, "max")
	if err := os.WriteFile(max, []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    map[string]string
		file   string
		want   int64
		source string
		fails  bool
	}{
		{"chart variable", map[string]string{EnvVar: "536870912"}, cgroup, 483183820, EnvVar, false},
		{"cgroup limit", nil, cgroup, 241591910, cgroup, false},
		{"cgroup without a limit", nil, max, 0, max, false},
		{"no cgroup", nil, filepath.Join(dir, "absent"), 0, "", false},
		{"not bytes", map[string]string{EnvVar: "256Mi"}, cgroup, 0, EnvVar, true},
	}
	for _, tt := range tests {
		debug.SetMemoryLimit(math.MaxInt64)
		got, source, err := Set(env(tt.env), tt.file)
		if (err != nil) != tt.fails || got != tt.want || source != tt.source {
			t.Errorf("%s: Set = %d, %q, %v; want %d, %q, error %v", tt.name, got, source, err, tt.want, tt.source, tt.fails)
		}
		if tt.want > 0 && debug.SetMemoryLimit(-1) != tt.want {
			t.Errorf("%s: runtime limit %d, want %d", tt.name, debug.SetMemoryLimit(-1), tt.want)
		}
	}
	debug.SetMemoryLimit(12345678)
	if got, source, _ := Set(env(map[string]string{"GOMEMLIMIT": "12345678B", EnvVar: "1"}), cgroup); source != "GOMEMLIMIT" || got != 12345678 {
		t.Errorf("GOMEMLIMIT set: %d from %q, want the runtime's own limit kept", got, source)
	}
}
