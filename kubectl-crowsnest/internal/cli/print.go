package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/output"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsapi"
	"github.com/crowsnest-dev/crowsnest/kubectl-crowsnest/internal/resultsclient"
)

func printImages(w io.Writer, f output.Format, items []resultsapi.ReportSummary, withNamespace bool, now time.Time) error {
	if f == output.Wide {
		t := output.NewTable(w, "IMAGE", "DIGEST", "CRITICAL", "HIGH", "MEDIUM", "LOW", "NEGLIGIBLE", "UNKNOWN", "FIXABLE", "FINDINGS", "WORKLOADS", "GRYPE", "DB-BUILT", "SCANNED")
		for _, it := range items {
			c := it.Counts
			t.Row(it.Image, it.Digest, c.Critical, c.High, c.Medium, c.Low, c.Negligible, c.Unknown, it.Fixable, it.Findings,
				workloadsCell(it.RunningIn, withNamespace), it.GrypeVersion, it.DbBuilt, output.Age(it.ScannedAt, now))
		}
		return t.Flush()
	}
	t := output.NewTable(w, "IMAGE", "DIGEST", "CRITICAL", "HIGH", "MEDIUM", "LOW", "FIXABLE", "WORKLOADS", "SCANNED")
	for _, it := range items {
		c := it.Counts
		t.Row(repository(it.Image), output.ShortDigest(it.Digest), c.Critical, c.High, c.Medium, c.Low, it.Fixable,
			workloadsCell(it.RunningIn, withNamespace), output.Age(it.ScannedAt, now))
	}
	return t.Flush()
}

// repository drops the digest from repository@sha256:…, which the DIGEST
// column shows.
func repository(image string) string {
	repo, _, _ := strings.Cut(image, "@")
	return repo
}

// findingRow is a finding with the container it was found in (why).
type findingRow struct {
	container string
	resultsapi.Finding
}

func printFindings(w io.Writer, f output.Format, rows []findingRow, withContainer bool) error {
	headers := []string{"ID", "SEVERITY", "PACKAGE", "VERSION", "FIXED-IN"}
	if f == output.Wide {
		headers = append(headers, "TYPE", "CVSS", "URL")
	}
	if withContainer {
		headers = append([]string{"CONTAINER"}, headers...)
	}
	t := output.NewTable(w, headers...)
	for _, r := range rows {
		cells := []any{r.Id, r.Severity, r.Package.Name, r.Package.Version, strings.Join(r.FixedIn, ",")}
		if f == output.Wide {
			score := ""
			if r.CvssScore != nil {
				score = fmt.Sprintf("%.1f", *r.CvssScore)
			}
			cells = append(cells, r.Package.Type, score, deref(r.Url))
		}
		if withContainer {
			cells = append([]any{r.container}, cells...)
		}
		t.Row(cells...)
	}
	return t.Flush()
}

// atLeast keeps the findings of severity min or worse (all when min is "").
func atLeast(fs []resultsapi.Finding, min string) []resultsapi.Finding {
	if min == "" {
		return fs
	}
	limit := resultsclient.SeverityRank(min)
	var out []resultsapi.Finding
	for _, f := range fs {
		if resultsclient.SeverityRank(string(f.Severity)) <= limit {
			out = append(out, f)
		}
	}
	return out
}

// counts prints non-zero severity counts, worst first: "2 critical, 1 high".
func counts(c resultsapi.SeverityCounts) string {
	n := []int{c.Critical, c.High, c.Medium, c.Low, c.Negligible, c.Unknown}
	var parts []string
	for i, v := range n {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, resultsclient.Severities[i]))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

// workloadsCell prints runningIn: <unknown> when nobody said where the
// image runs, <not running> when it runs nowhere.
func workloadsCell(ws *[]resultsapi.RunningWorkload, withNamespace bool) string {
	switch {
	case ws == nil:
		return "<unknown>"
	case len(*ws) == 0:
		return "<not running>"
	}
	return output.Workloads(ws, withNamespace)
}

// deref prints an optional string of the API (absent: empty).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
