package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func stamp(t *testing.T, version, revision string, info *debug.BuildInfo) {
	t.Helper()
	oldV, oldR, oldRead := Version, Revision, readBuildInfo
	t.Cleanup(func() { Version, Revision, readBuildInfo = oldV, oldR, oldRead })
	Version, Revision = version, revision
	readBuildInfo = func() (*debug.BuildInfo, bool) { return info, info != nil }
}

func vcs(rev, modified string) *debug.BuildInfo {
	return &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.modified", Value: modified},
	}}
}

// TestGetRevision: the link-time value wins; otherwise the toolchain's
// vcs.revision, marked dirty when the tree was modified; otherwise "unknown".
func TestGetRevision(t *testing.T) {
	tests := []struct {
		name     string
		revision string
		info     *debug.BuildInfo
		want     string
	}{
		{"ldflags wins", "abc123", vcs("fff", "true"), "abc123"},
		{"vcs clean", "", vcs("def456", "false"), "def456"},
		{"vcs dirty", "", vcs("def456", "true"), "def456-dirty"},
		{"no vcs settings", "", &debug.BuildInfo{}, "unknown"},
		{"no build info", "", nil, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stamp(t, "dev", tt.revision, tt.info)
			if got := GetRevision(); got != tt.want {
				t.Errorf("GetRevision() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	stamp(t, "v1.2.3", "abc123", nil)
	got := Labels()
	want := map[string]string{"version": "v1.2.3", "revision": "abc123", "goversion": runtime.Version()}
	if len(got) != len(want) {
		t.Fatalf("Labels() = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Labels()[%q] = %q, want %q", k, got[k], v)
		}
	}
	for _, name := range LabelNames() {
		if _, ok := got[name]; !ok {
			t.Errorf("LabelNames() has %q, Labels() does not", name)
		}
	}
	if len(LabelNames()) != len(got) {
		t.Errorf("LabelNames() = %v, Labels() = %v", LabelNames(), got)
	}
}

func TestString(t *testing.T) {
	stamp(t, "dev", "abc123", nil)
	want := "operator dev (revision abc123, " + runtime.Version() + ")"
	if got := String("operator"); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestDefaults: an unstamped build says "dev" and never an empty revision.
func TestDefaults(t *testing.T) {
	if Version != "dev" {
		t.Errorf("Version = %q, want dev (set only by -ldflags -X)", Version)
	}
	if GetRevision() == "" {
		t.Error("GetRevision() is empty")
	}
	if GoVersion() != runtime.Version() {
		t.Errorf("GoVersion() = %q", GoVersion())
	}
}
