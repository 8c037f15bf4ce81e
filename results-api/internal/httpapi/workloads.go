package httpapi

import (
	"net/http"
	"slices"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// listWorkloads serves the inventory's workloads with their images and
// severity totals (within the reader's scope: the store filters). The
// counts are of the findings active in the view of the workload's
// namespace: its exceptions and the cluster's apply, as they do for
// ?namespace=<its namespace> (suppressedPerNamespace).
func (s *Server) listWorkloads(w http.ResponseWriter, r *http.Request) {
	q := store.WorkloadQuery{Namespace: r.URL.Query().Get("namespace")}
	var err error
	if q.Limit, err = intParam(r, "limit", 200, 1000); err != nil {
		writeError(w, r, err)
		return
	}
	if len(q.Namespace) > 63 {
		writeError(w, r, badQuery("namespace is longer than 63 characters"))
		return
	}
	if v := r.URL.Query().Get("minSeverity"); v != "" {
		sev, ok := report.ParseSeverity(v)
		if !ok || v == "unknown" || v == "none" {
			writeError(w, r, badQuery("minSeverity must be critical, high, medium, low or negligible"))
			return
		}
		q.MinSeverity = sev
	}
	ws, more, err := s.cfg.Store.ListWorkloads(r.Context(), q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sup, err := s.suppressedPerNamespace(r.Context(), workloadNamespaces(ws), workloadDigests(ws), s.now())
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.WorkloadList{Items: make([]api.WorkloadSummary, len(ws)), Truncated: more}
	for i, wl := range ws {
		var total report.Counts
		fixable := 0
		sum := api.WorkloadSummary{Namespace: wl.Namespace, Kind: wl.Kind, Name: wl.Name, Images: make([]api.WorkloadImage, len(wl.Images))}
		for j, img := range wl.Images {
			ai := api.WorkloadImage{Digest: img.Digest, Image: img.Image, Containers: img.Containers, Pods: img.Pods, Scanned: img.Scanned}
			if img.Scanned {
				if t := sup[nsDigest{wl.Namespace, img.Digest}]; t != nil {
					img.Counts, img.Fixable = minusCounts(img.Counts, t.counts), img.Fixable-t.fixable
				}
				c, f := render.SeverityCounts(img.Counts), img.Fixable
				ai.Counts, ai.Fixable = &c, &f
				total.Critical += img.Counts.Critical
				total.High += img.Counts.High
				total.Medium += img.Counts.Medium
				total.Low += img.Counts.Low
				total.Negligible += img.Counts.Negligible
				total.Unknown += img.Counts.Unknown
				fixable += img.Fixable
			}
			sum.Images[j] = ai
		}
		sum.Counts, sum.Fixable = render.SeverityCounts(total), fixable
		out.Items[i] = sum
	}
	writeJSON(w, http.StatusOK, out)
}

// workloadNamespaces and workloadDigests are the namespaces and the
// scanned images of ws, each once.
func workloadNamespaces(ws []store.WorkloadImages) []string {
	out := []string{}
	for _, wl := range ws {
		if len(out) == 0 || out[len(out)-1] != wl.Namespace { // namespace order
			out = append(out, wl.Namespace)
		}
	}
	return out
}

func workloadDigests(ws []store.WorkloadImages) []string {
	out := []string{}
	for _, wl := range ws {
		for _, img := range wl.Images {
			if img.Scanned {
				out = append(out, img.Digest)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// minusCounts is a − b per severity.
func minusCounts(a, b report.Counts) report.Counts {
	return report.Counts{Critical: a.Critical - b.Critical, High: a.High - b.High, Medium: a.Medium - b.Medium,
		Low: a.Low - b.Low, Negligible: a.Negligible - b.Negligible, Unknown: a.Unknown - b.Unknown}
}
