package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGet(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name              string
		version, revision string
		info              *debug.BuildInfo
		wantVer, wantRev  string
	}{
		{"ldflags win", "v1.0.0", "f00", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs}, "v1.0.0", "f00"},
		{"go install @version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0", "unknown"},
		{"go build in a dirty tree", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, "dev", "abc-dirty"},
		{"no build info", "", "", nil, "dev", "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldV, oldR, oldRead := Version, Revision, readBuildInfo
			defer func() { Version, Revision, readBuildInfo = oldV, oldR, oldRead }()
			Version, Revision = tt.version, tt.revision
			readBuildInfo = func() (*debug.BuildInfo, bool) { return tt.info, tt.info != nil }
			got := Get()
			if got.Version != tt.wantVer || got.Revision != tt.wantRev || got.GoVersion != runtime.Version() {
				t.Errorf("Get() = %+v, want version %q revision %q", got, tt.wantVer, tt.wantRev)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "v0.1.0", Revision: "abc123", GoVersion: "go1.26.0"}.String()
	if want := "kubectl-crowsnest v0.1.0 (revision abc123, go1.26.0)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
