package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release (git describe), set at link time. Empty: the
// module version of a `go install …@version` build, else "dev".
var Version = ""

// Revision is the full commit, set at link time. Empty: the toolchain's
// vcs.revision (+ "-dirty" when the tree was modified), else "unknown".
var Revision = ""

// readBuildInfo is swapped in tests.
var readBuildInfo = debug.ReadBuildInfo

// Info is the build, as `kubectl crowsnest version -o json|yaml` prints it.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
}

// Get returns the running build.
func Get() Info {
	info := Info{Version: Version, Revision: Revision, GoVersion: runtime.Version()}
	bi, ok := readBuildInfo()
	if info.Version == "" {
		info.Version = "dev"
		if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
	}
	if info.Revision == "" {
		info.Revision = "unknown"
		if ok {
			info.Revision = vcsRevision(bi)
		}
	}
	return info
}

func vcsRevision(bi *debug.BuildInfo) string {
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// String is the --version line: "kubectl-crowsnest v0.1.0 (revision abc123, go1.26.0)".
func (i Info) String() string {
	return fmt.Sprintf("kubectl-crowsnest %s (revision %s, %s)", i.Version, i.Revision, i.GoVersion)
}
