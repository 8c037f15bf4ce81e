package httpapi

import (
	"io"
	"net/http"
	"strconv"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/export"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// Exports stream: the store hands out pages of exportPage findings, each
// written before the next is read, so an export holds one page (charged
// to the read budget) whatever the report's size.
const (
	exportPage = 1000
	// Rows of the fleet CSV: defaultFleetRows unless the limit parameter
	// asks for more, at most maxFleetRows.
	defaultFleetRows = 10000
	maxFleetRows     = 200000
	// TruncatedHeader is "true" on a fleet CSV cut at its limit.
	TruncatedHeader = "X-Crowsnest-Truncated"
)

// getSARIF streams a report's findings as a SARIF 2.1.0 log: the rules
// (one per vulnerability id) first, then the results.
func (s *Server) getSARIF(w http.ResponseWriter, r *http.Request) {
	digest, sum, lease, ok := s.startReportExport(w, r)
	if !ok {
		return
	}
	defer lease.release()
	ew := &exportWriter{w: w, contentType: "application/sarif+json", filename: digest[7:19] + ".sarif"}
	log := export.NewSARIF(ew, export.Target{Image: sum.Image, Digest: digest, Provenance: provenanceOf(sum)})
	err := s.cfg.Store.WalkVulnerabilities(r.Context(), digest, exportPage, func(vs []store.VulnRule) error {
		for _, v := range vs {
			if err := log.Rule(export.Rule(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = s.cfg.Store.WalkFindings(r.Context(), digest, exportPage, func(fs []report.Finding) error {
			for i := range fs {
				if err := log.Result(&fs[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = log.Close()
	}
	s.endExport(ew, r, err)
}

// getReportCSV streams a report's findings as CSV, one row each.
func (s *Server) getReportCSV(w http.ResponseWriter, r *http.Request) {
	digest, sum, lease, ok := s.startReportExport(w, r)
	if !ok {
		return
	}
	defer lease.release()
	running, err := s.cfg.Store.RunningIn(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ew := &exportWriter{w: w, contentType: "text/csv; charset=utf-8; header=present", filename: digest[7:19] + "-findings.csv"}
	prov := provenanceOf(sum)
	out, err := export.NewCSV(ew)
	if err == nil {
		err = s.cfg.Store.WalkFindings(r.Context(), digest, exportPage, func(fs []report.Finding) error {
			for i := range fs {
				if err := out.Row(export.Row{Image: sum.Image, Digest: digest, Finding: &fs[i], RunningIn: running, Provenance: prov}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = out.Close()
	}
	s.endExport(ew, r, err)
}

// listFindingsCSV streams the findings of the images the report list
// would show with the same filters, running images only unless running
// says otherwise, at most limit rows. The limit is counted before the
// first row, so TruncatedHeader can tell that the export was cut.
func (s *Server) listFindingsCSV(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if r.URL.Query().Get("running") == "" {
		running := true
		q.Running = &running
	}
	fq := store.FleetQuery{ListQuery: q}
	if fq.Limit, err = intParam(r, "limit", defaultFleetRows, maxFleetRows); err != nil {
		writeError(w, r, err)
		return
	}
	n, err := s.cfg.Store.CountFleetFindings(r.Context(), fq, fq.Limit+1)
	if err != nil {
		writeError(w, r, err)
		return
	}
	lease, err := s.read.take(r.Context(), exportCost(n))
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer lease.release()
	ew := &exportWriter{w: w, contentType: "text/csv; charset=utf-8; header=present", filename: "crowsnest-findings.csv"}
	w.Header().Set(TruncatedHeader, strconv.FormatBool(n > fq.Limit))
	w.Header().Set("X-Crowsnest-Row-Limit", strconv.Itoa(fq.Limit))
	out, err := export.NewCSV(ew)
	if err == nil {
		err = s.cfg.Store.WalkFleetFindings(r.Context(), fq, exportPage, func(fs []store.FleetFinding) error {
			for i := range fs {
				f := &fs[i]
				if err := out.Row(export.Row{Image: f.Image, Digest: f.Digest, Finding: &f.Finding, RunningIn: f.RunningIn,
					Provenance: export.Provenance{GrypeVersion: f.GrypeVersion, DBBuilt: f.DBBuilt, DBSchema: f.DBSchema}}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil {
		err = out.Close()
	}
	s.endExport(ew, r, err)
}

// startReportExport reads the digest of a per-report export and its
// summary, and takes the export's share of the read budget. On false the
// error response is written; on true the caller releases the lease.
func (s *Server) startReportExport(w http.ResponseWriter, r *http.Request) (string, *report.Summary, *lease, bool) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return "", nil, nil, false
	}
	sum, err := s.cfg.Store.GetSummary(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return "", nil, nil, false
	}
	l, err := s.read.take(r.Context(), exportCost(sum.Findings))
	if err != nil {
		writeError(w, r, err)
		return "", nil, nil, false
	}
	return digest, sum, l, true
}

// exportCost is what an export of n findings holds: one page.
func exportCost(n int) int64 { return int64(max(1, min(n, exportPage))) * DetailCostPerFinding }

// endExport finishes an export that failed with err: an error response
// while nothing is sent, otherwise the response is cut short (the client
// sees a broken stream, never a complete-looking file that misses rows).
func (s *Server) endExport(ew *exportWriter, r *http.Request, err error) {
	if err == nil {
		return
	}
	if !ew.started {
		writeError(ew.w, r, err)
		return
	}
	s.cfg.Logger.WarnContext(r.Context(), "export cut short", "path", r.URL.Path, "sent", ew.sent, "error", err)
	// net/http's way to abort a response: the connection is closed
	// without the final chunk; the recoverer passes it through.
	panic(http.ErrAbortHandler)
}

// exportWriter sends the export's headers with its first byte, so that an
// error before it can still be a JSON error with its status.
type exportWriter struct {
	w                     http.ResponseWriter
	contentType, filename string
	started               bool
	sent                  int64
}

func (e *exportWriter) Write(p []byte) (int, error) {
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", e.contentType)
		h.Set("Content-Disposition", `attachment; filename="`+e.filename+`"`)
		h.Set("Cache-Control", "no-store")
		e.w.WriteHeader(http.StatusOK)
	}
	n, err := e.w.Write(p)
	e.sent += int64(n)
	return n, err
}

var _ io.Writer = (*exportWriter)(nil)

// provenanceOf is what sum's findings were matched with, for the exports.
func provenanceOf(sum *report.Summary) export.Provenance {
	return export.Provenance{GrypeVersion: sum.GrypeVersion, DBBuilt: sum.DBBuilt, DBSchema: sum.DBSchema}
}
