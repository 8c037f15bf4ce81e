package httpapi

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/exception"
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
// (one per vulnerability id) first, then the results. Like the detail it
// follows the caller's view: findings an exception suppresses are left
// out unless suppressed=true or all asks for them, and then carry SARIF's
// suppression; rules only of left-out findings are left out too.
func (s *Server) getSARIF(w http.ResponseWriter, r *http.Request) {
	ex, ok := s.startReportExport(w, r)
	if !ok {
		return
	}
	defer ex.lease.release()
	digest, sum, sup := ex.digest, ex.sum, ex.sup
	ew := &exportWriter{w: w, contentType: "application/sarif+json", filename: digest[7:19] + ".sarif"}
	log := export.NewSARIF(ew, export.Target{Image: sum.Image, Digest: digest, Provenance: provenanceOf(sum)})
	err := s.cfg.Store.WalkVulnerabilities(r.Context(), digest, exportPage, func(vs []store.VulnRule) error {
		for _, v := range vs {
			if !sup.keepsVuln(v.ID, ex.mode) {
				continue
			}
			if err := log.Rule(export.Rule(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = s.cfg.Store.WalkFindings(r.Context(), digest, exportPage, func(fs []report.Finding) error {
			for i := range fs {
				e := sup.decide(digest, &fs[i])
				if !ex.mode.keeps(e != nil) {
					continue
				}
				if err := log.Result(&fs[i], exportSuppression(e)); err != nil {
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

// getReportCSV streams a report's findings as CSV, one row each, in the
// caller's view as getSARIF.
func (s *Server) getReportCSV(w http.ResponseWriter, r *http.Request) {
	ex, ok := s.startReportExport(w, r)
	if !ok {
		return
	}
	defer ex.lease.release()
	digest, sum, sup := ex.digest, ex.sum, ex.sup
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
				e := sup.decide(digest, &fs[i])
				if !ex.mode.keeps(e != nil) {
					continue
				}
				row := export.Row{Image: sum.Image, Digest: digest, Finding: &fs[i], RunningIn: running, Provenance: prov, Suppression: exportSuppression(e)}
				if err := out.Row(row); err != nil {
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
// says otherwise, at most limit rows, in the list's view (namespace):
// suppressed findings left out unless suppressed=true or all asks for them.
// The rows are counted before the first one, so TruncatedHeader can tell
// that the export was cut: fleetSuppression first counts what exceptions
// suppress among the findings.
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
	limit, err := intParam(r, "limit", defaultFleetRows, maxFleetRows)
	if err != nil {
		writeError(w, r, err)
		return
	}
	mode, err := suppressedParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	v, err := viewOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	fs, err := s.fleetSuppression(r.Context(), v, fq)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// rows is how many rows q has in mode (no further than limit+1), and
	// fq.Limit how many findings the walk reads to find the first limit.
	var rows int
	switch {
	case mode == bothModes || fs.suppressed == 0 && mode == activeOnly:
		rows, err = s.cfg.Store.CountFleetFindings(r.Context(), fq, limit+1)
		fq.Limit = min(rows, limit)
	case mode == activeOnly:
		var n int
		n, err = s.cfg.Store.CountFleetFindings(r.Context(), fq, limit+fs.suppressed+1)
		rows, fq.Limit = n-fs.suppressed, min(n, limit+fs.suppressed)
	default: // suppressed only: read until the last one written
		rows = fs.suppressed
		fq.Limit, err = s.cfg.Store.CountFleetFindings(r.Context(), fq, math.MaxInt32)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	target := min(rows, limit)
	lease, err := s.read.take(r.Context(), exportCost(rows))
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer lease.release()
	ew := &exportWriter{w: w, contentType: "text/csv; charset=utf-8; header=present", filename: "crowsnest-findings.csv"}
	w.Header().Set(TruncatedHeader, strconv.FormatBool(rows > limit))
	w.Header().Set("X-Crowsnest-Row-Limit", strconv.Itoa(limit))
	out, err := export.NewCSV(ew)
	if err == nil && target > 0 {
		written := 0
		err = s.cfg.Store.WalkFleetFindings(r.Context(), fq, exportPage, func(ffs []store.FleetFinding) error {
			for i := range ffs {
				f := &ffs[i]
				e := fs.decide(f)
				if !mode.keeps(e != nil) {
					continue
				}
				if err := out.Row(export.Row{Image: f.Image, Digest: f.Digest, Finding: &f.Finding, RunningIn: f.RunningIn,
					Provenance:  export.Provenance{GrypeVersion: f.GrypeVersion, DBBuilt: f.DBBuilt, DBSchema: f.DBSchema},
					Suppression: exportSuppression(e)}); err != nil {
					return err
				}
				if written++; written == target {
					return errFleetDone
				}
			}
			return nil
		})
		if errors.Is(err, errFleetDone) {
			err = nil
		}
	}
	if err == nil {
		err = out.Close()
	}
	s.endExport(ew, r, err)
}

// errFleetDone stops a fleet walk that wrote its last row.
var errFleetDone = errors.New("fleet export complete")

// fleetSuppressed is what exceptions suppress among a fleet export's
// findings in one view.
type fleetSuppressed struct {
	set *exception.Set
	// runsIn are the namespaces of the view that run each digest with a
	// finding an exception could suppress.
	runsIn     map[string][]string
	suppressed int
}

// fleetSuppression decides, in view v, the findings of fq that some
// exception could suppress, and counts the suppressed ones: one statement
// (store.EachFleetCandidate), none without such an exception. It holds a
// list of namespaces per digest with such findings, not the findings.
func (s *Server) fleetSuppression(ctx context.Context, v view, fq store.FleetQuery) (*fleetSuppressed, error) {
	set := s.exceptions()
	out := &fleetSuppressed{set: set.At(set.Now()), runsIn: map[string][]string{}}
	var ids []string
	for _, vs := range out.set.SuppressingVulns() {
		if vs.Namespace == "" || v.all || slices.Contains(v.namespaces, vs.Namespace) {
			ids = append(ids, vs.VulnID)
		}
	}
	slices.Sort(ids)
	var (
		runsIn     []string
		lastDigest string
	)
	err := s.cfg.Store.EachFleetCandidate(ctx, fq, slices.Compact(ids), func(c *store.Candidate) error {
		if c.Digest != lastDigest {
			runsIn, lastDigest = v.runsIn(c.RunsIn), c.Digest
			out.runsIn[c.Digest] = runsIn
		}
		if out.set.Decide(exception.Finding{Digest: c.Digest, VulnID: c.VulnID, PURL: c.PURL, FixedIn: c.FixedIn}, runsIn) != nil {
			out.suppressed++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decide returns the exception that suppresses f, or nil.
func (fs *fleetSuppressed) decide(f *store.FleetFinding) *exception.Exception {
	runsIn, ok := fs.runsIn[f.Digest]
	if !ok {
		return nil // no finding of the digest could be suppressed
	}
	return fs.set.Decide(exceptionFinding(f.Digest, &f.Finding), runsIn)
}

// reportExport is what a per-report export reads before its first byte.
type reportExport struct {
	digest string
	sum    *report.Summary
	mode   suppressedMode
	sup    *digestSuppression
	lease  *lease
}

// startReportExport reads the digest of a per-report export, its summary,
// the suppressed parameter and how the findings stand in the caller's view,
// and takes the export's share of the read budget. On false the error
// response is written; on true the caller releases the lease.
func (s *Server) startReportExport(w http.ResponseWriter, r *http.Request) (*reportExport, bool) {
	ex := &reportExport{}
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return nil, false
	}
	ex.digest = digest
	if ex.mode, err = suppressedParam(r); err != nil {
		writeError(w, r, err)
		return nil, false
	}
	v, err := viewOf(r)
	if err != nil {
		writeError(w, r, err)
		return nil, false
	}
	if ex.sum, err = s.cfg.Store.GetSummary(r.Context(), digest); err != nil {
		writeError(w, r, err)
		return nil, false
	}
	if ex.sup, err = s.suppressionOf(r.Context(), v, digest, ex.sum.Findings); err != nil {
		writeError(w, r, err)
		return nil, false
	}
	if ex.lease, err = s.read.take(r.Context(), exportCost(ex.sum.Findings)); err != nil {
		writeError(w, r, err)
		return nil, false
	}
	return ex, true
}

// exportSuppression renders the exception or imported statement e (nil:
// none) for the exports.
func exportSuppression(e *exception.Exception) *export.Suppression {
	if e == nil {
		return nil
	}
	out := &export.Suppression{Exception: e.Ref.String(), Status: e.Status, Justification: e.Justification,
		Statement: e.Statement, ActionStatement: e.ActionStatement}
	if e.VEX == nil {
		out.ExpiresAt = e.ExpiresAt
	}
	return out
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
