// Package buildinfo says which build of a Crowsnest binary is running: the
// version and revision stamped at link time (make, and so the image builder, passes
// -ldflags "-X …/buildinfo.Version=… -X …/buildinfo.Revision=…"), and the Go
// release it was built with. Every binary prints String for --version and
// exports Labels as the crowsnest_build_info gauge. Dependency-free on
// purpose: the metric itself is registered by each binary.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release (git describe), set at link time.
var Version = "dev"

// Revision is the full commit, set at link time. Empty: the commit the Go
// toolchain stamped into the binary (vcs.revision), if any.
var Revision = ""

// Metric is the name of the build-info gauge every serving binary exports
// with Labels as labels and value 1:
//
//	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: buildinfo.Metric, Help: buildinfo.MetricHelp}, buildinfo.LabelNames())
//	g.With(buildinfo.Labels()).Set(1)
const Metric = "crowsnest_build_info"

// MetricHelp is the gauge's help text.
const MetricHelp = "A metric with a constant '1' value labeled by version, revision and goversion from which the binary was built."

// unknown stands for a revision neither stamped nor recorded by the toolchain.
const unknown = "unknown"

// readBuildInfo is swapped in tests.
var readBuildInfo = debug.ReadBuildInfo

// GetRevision returns Revision, or else the toolchain's vcs.revision with
// "-dirty" appended when the work tree had changes, or else "unknown".
func GetRevision() string {
	if Revision != "" {
		return Revision
	}
	bi, ok := readBuildInfo()
	if !ok {
		return unknown
	}
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
		return unknown
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// GoVersion is the Go release the binary was built with (go1.26.0).
func GoVersion() string { return runtime.Version() }

// LabelNames are the build-info gauge's label names, in order. They are
// variable labels, not constant ones, so a registry's description (the
// generated metrics reference) does not change with every commit.
func LabelNames() []string { return []string{"version", "revision", "goversion"} }

// Labels are the build-info gauge's labels: version, revision, goversion.
func Labels() map[string]string {
	return map[string]string{
		"version":   Version,
		"revision":  GetRevision(),
		"goversion": GoVersion(),
	}
}

// String is the --version line of the binary called name:
// "operator dev (revision abc123, go1.26.0)".
func String(name string) string {
	return fmt.Sprintf("%s %s (revision %s, %s)", name, Version, GetRevision(), GoVersion())
}
