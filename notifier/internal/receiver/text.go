package receiver

import (
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// ImageLink is the dashboard page of a digest (the web UI's history route
// /images/<digest>); empty without a dashboard URL.
func ImageLink(dashboard, digest string) string {
	if dashboard == "" || digest == "" {
		return ""
	}
	return strings.TrimRight(dashboard, "/") + "/images/" + digest
}

// Title is an item's one-line summary.
func Title(it state.Item) string {
	switch it.Kind {
	case config.KindNew:
		if len(it.Findings) == 0 {
			return fmt.Sprintf("First scan of %s in %s: %s", it.Image, it.Namespace, counts(it.Counts))
		}
		return fmt.Sprintf("%d new %s in %s (%s)", len(it.Findings), plural(len(it.Findings), "vulnerability", "vulnerabilities"), it.Image, it.Namespace)
	case config.KindKEV:
		return fmt.Sprintf("%d %s in %s newly listed in CISA KEV (%s)", len(it.Findings), plural(len(it.Findings), "vulnerability", "vulnerabilities"), it.Image, it.Namespace)
	case config.KindRunning:
		return fmt.Sprintf("%s now runs %s with critical vulnerabilities in %s", strings.Join(it.Workloads, ", "), it.Image, it.Namespace)
	case config.KindResolved:
		return fmt.Sprintf("%d critical %s resolved in %s (%s)", len(it.Findings), plural(len(it.Findings), "vulnerability", "vulnerabilities"), it.Image, it.Namespace)
	case config.KindScanFailures:
		return fmt.Sprintf("%d failed scans in namespace %s (last: %s)", it.Failures, it.Namespace, orDash(it.Reason))
	}
	return it.Kind
}

// Lines are an item's details: each finding with severity, package and
// fixed-in version, the counts not listed, the workloads.
func Lines(it state.Item) []string {
	var out []string
	for _, f := range it.Findings {
		fix := "no fix yet"
		if len(f.FixedIn) > 0 {
			fix = "fixed in " + strings.Join(f.FixedIn, ", ")
		}
		risk := ""
		if f.KEV {
			risk += ", in CISA KEV"
		}
		if f.EPSS != nil {
			risk += fmt.Sprintf(", EPSS %.1f%%", *f.EPSS*100)
		}
		out = append(out, fmt.Sprintf("%s (%s) in %s %s, %s%s", f.ID, f.Severity, f.Package, f.Version, fix, risk))
	}
	if len(it.Counts) > 0 && it.Kind != config.KindNew || len(it.Findings) > 0 && len(it.Counts) > 0 {
		out = append(out, "in all: "+counts(it.Counts))
	}
	if len(it.Workloads) > 0 && it.Kind != config.KindRunning {
		out = append(out, "running in "+it.Namespace+": "+strings.Join(it.Workloads, ", "))
	}
	return out
}

// Severity is the worst severity an item names ("" for scan failures).
func Severity(it state.Item) string {
	best := ""
	consider := func(s string) {
		if best == "" || config.Rank(s) > config.Rank(best) {
			best = s
		}
	}
	for _, f := range it.Findings {
		consider(f.Severity)
	}
	for s := range it.Counts {
		consider(s)
	}
	return best
}

func counts(c map[string]int) string {
	var parts []string
	for _, s := range config.Severities {
		if n := c[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
