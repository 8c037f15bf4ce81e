package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/render"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

const maxLookupDigests = 10000

// digestParam reads the {digest} path segment. chi matches on the raw
// (escaped) path when there is one, so a client that percent-encodes the
// colon ("sha256%3A…") hands us the escaped form; unescape it first.
func digestParam(r *http.Request) (string, error) {
	p := chi.URLParam(r, "digest")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return report.ParseDigest(p)
}

func (s *Server) putReport(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		s.reject(w, r, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/vnd.cyclonedx+json" && mt != "application/json") {
			s.reject(w, r, newError(http.StatusUnsupportedMediaType, "unsupported_media_type",
				"Content-Type must be application/vnd.cyclonedx+json or application/json"))
			return
		}
	}
	image := r.URL.Query().Get("image")
	if len(image) > 1024 {
		s.reject(w, r, newError(http.StatusBadRequest, "invalid_image", "image reference longer than 1024 bytes"))
		return
	}
	db, err := uploadedDB(r)
	if err != nil {
		s.reject(w, r, err)
		return
	}
	raw, wire, release, err := s.readUpload(w, r)
	if err != nil {
		s.reject(w, r, err)
		return
	}
	defer release()
	rep, err := ingest.Parse(raw, ingest.Options{Digest: digest, Image: image, Now: time.Now(), MaxFindings: s.cfg.Limits.MaxFindings})
	if err != nil {
		if errors.Is(err, ingest.ErrTooManyFindings) {
			s.cfg.Metrics.LimitRefusals.WithLabelValues("findings").Inc()
		}
		s.reject(w, r, err)
		return
	}
	rep.Frame, rep.FrameWindow = wire.Frame()
	if db.Built != "" {
		rep.DBBuilt, rep.DBSchema = db.Built, db.Schema // what Grype said over what the BOM says
	}
	if scopeOf(r) == authz.Rematch {
		rep.Cause = report.CauseRematch // the store decides scan or rescan otherwise
	}
	for _, warning := range rep.Warnings {
		s.cfg.Logger.WarnContext(r.Context(), "report upload", "digest", digest, "warning", warning)
		w.Header().Add("Warning", `299 - `+strconv.Quote(warning))
	}
	res, err := s.cfg.Store.PutReport(r.Context(), rep)
	if err != nil {
		writeError(w, r, err)
		return
	}
	m := s.cfg.Metrics
	m.IngestBytes.Add(float64(len(raw)))
	status := http.StatusOK
	switch {
	case res.Created:
		status = http.StatusCreated
		m.ReportsIngested.WithLabelValues("created").Inc()
	case res.Unchanged:
		m.ReportsIngested.WithLabelValues("unchanged").Inc()
	default:
		m.ReportsIngested.WithLabelValues("replaced").Inc()
	}
	if !res.Unchanged && !res.FindingsKept {
		m.FindingsStored.Add(float64(rep.Findings))
	}
	s.cfg.Changes.Bump()
	s.cfg.Notifier.ReportStored(res.Summary)
	if res.Change != nil {
		s.cfg.Notifier.FindingsChanged(*res.Change)
	}
	writeJSON(w, status, render.ReportSummary(res.Summary))
}

// readUpload reads and decompresses a PUT body within the ingest budget:
// first the wire bytes (the Content-Length, or the size limit when it is
// unknown), then IngestCostFactor times the BOM size for decoding it, so
// a compressed upload is charged for what its gzip trailer or zstd frame
// declares, not for the largest BOM possible. release returns the budget
// once the report is stored or refused; nothing is allocated before the
// budget admits it.
func (s *Server) readUpload(w http.ResponseWriter, r *http.Request) (raw []byte, wire *ingest.Wire, release func(), err error) {
	maxBytes := s.cfg.MaxBOMBytes
	if r.ContentLength > maxBytes {
		return nil, nil, nil, fmt.Errorf("%w: Content-Length %d, the limit is %d bytes", ingest.ErrTooLarge, r.ContentLength, maxBytes)
	}
	first := maxBytes // the wire bytes, unknown before they are read
	if r.ContentLength >= 0 {
		first = r.ContentLength
		if enc := r.Header.Get("Content-Encoding"); enc == "" || strings.EqualFold(enc, "identity") {
			first *= IngestCostFactor // all of it at once: this is the final size
		}
	}
	lease, err := s.ingest.take(r.Context(), first)
	if err != nil {
		return nil, nil, nil, err
	}
	// The wire limit equals the decompressed limit: compression only ever
	// shrinks JSON, and the decompressed size is bounded separately.
	wire, err = ingest.ReadWire(http.MaxBytesReader(w, r.Body, maxBytes), r.Header.Get("Content-Encoding"), r.ContentLength, maxBytes)
	if err == nil {
		err = lease.resize(r.Context(), ingestCost(wire))
	}
	if err == nil {
		raw, err = wire.Decode()
	}
	if err != nil {
		lease.release()
		return nil, nil, nil, err
	}
	return raw, wire, lease.release, nil
}

// ingestCost is the memory an upload holds from decoding to storing: its
// wire bytes when compressed (kept until decoded) and the BOM's decoding.
func ingestCost(w *ingest.Wire) int64 {
	c := IngestCostFactor * w.Size()
	if w.Len() != w.Size() {
		c += w.Len()
	}
	return c
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Metrics.ReportsIngested.WithLabelValues("rejected").Inc()
	writeError(w, r, err)
}

// Pages of a report's findings: a report holds up to 50,000 of them, and
// the detail is an open read.
const (
	defaultFindingPage = 500
	maxFindingPage     = 5000
)

func (s *Server) getReport(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	fq := store.FindingQuery{Order: store.FindingOrder(q.Get("sort")), Cursor: q.Get("findingsCursor")}
	switch fq.Order {
	case "":
		fq.Order = store.ByRisk
	case store.ByRisk, store.BySeverity, store.ByID, store.ByPackage:
	default:
		writeError(w, r, badQuery("sort must be risk, severity, id or package"))
		return
	}
	if fq.Risk, err = riskQuery(r); err != nil {
		writeError(w, r, err)
		return
	}
	if fq.Age, err = s.ageQuery(r); err != nil {
		writeError(w, r, err)
		return
	}
	if fq.Limit, err = intParam(r, "findingsLimit", defaultFindingPage, maxFindingPage); err != nil {
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
	sum, err := s.cfg.Store.GetSummary(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sup, err := s.suppressionOf(r.Context(), v, digest, sum.Findings)
	if err != nil {
		writeError(w, r, err)
		return
	}
	fq.IDs = sup.filter(mode)
	lease, err := s.read.take(r.Context(), int64(min(sum.Findings, fq.Limit))*DetailCostPerFinding)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer lease.release()
	page, err := s.cfg.Store.GetReport(r.Context(), digest, fq)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d := render.ReportDetail(&page.Report)
	d.FindingsNextCursor = optString(page.NextCursor)
	d.SuppressedFindings = len(sup.suppressed)
	d.ActiveFindings = sum.Findings - d.SuppressedFindings
	activeDetail(&d, sup.tally())
	for i, f := range page.FindingList {
		df := &d.Findings[i]
		df.FirstSeen, df.AgeDays, df.SlaDue, df.Overdue = lifecycleFields(f, s.cfg.SLA, fq.Age.Now)
	}
	if len(sup.suppressed) > 0 || sup.annotates {
		for i, f := range page.FindingList {
			ef := exceptionFinding(digest, &f)
			if d.Findings[i].Suppression = newSuppression(sup.set.Decide(ef, sup.runsIn)); d.Findings[i].Suppression == nil && sup.annotates {
				d.Findings[i].VexStatement = newAnnotation(sup.set.Annotate(ef, sup.runsIn))
			}
		}
	}
	writeJSON(w, http.StatusOK, d)
}

// getBOM streams the BOM: the store hands out a decompressing reader over
// the compressed bytes, within the read budget, and io.Copy writes it as
// it is decompressed.
func (s *Server) getBOM(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	info, err := s.cfg.Store.StatBOM(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	lease, err := s.read.take(r.Context(), info.ReadMemory())
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer lease.release()
	bom, err := s.cfg.Store.OpenBOM(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer bom.Close()
	w.Header().Set("Content-Type", "application/vnd.cyclonedx+json")
	w.Header().Set("Content-Length", strconv.FormatInt(bom.Size, 10))
	w.Header().Set("Content-Disposition", `attachment; filename="`+digest[7:19]+`.cdx.json"`)
	if n, err := io.Copy(w, bom); err != nil {
		// The status is sent: all that is left is to cut the response
		// short, which the missing bytes of Content-Length tell the client.
		s.cfg.Logger.DebugContext(r.Context(), "bom download cut short", "digest", digest, "sent", n, "size", bom.Size, "error", err)
	}
}

func (s *Server) deleteReport(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	sum, err := s.cfg.Store.DeleteReport(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.cfg.Changes.Bump()
	s.cfg.Notifier.ReportDeleted(*sum)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) lookupReports(w http.ResponseWriter, r *http.Request) {
	var req api.LookupRequest
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, r, err)
			return
		}
		writeError(w, r, newError(http.StatusBadRequest, "invalid_json", "body must be {\"digests\":[...]}: "+err.Error()))
		return
	}
	if len(req.Digests) > maxLookupDigests {
		writeError(w, r, newError(http.StatusRequestEntityTooLarge, "too_many_digests",
			"at most "+strconv.Itoa(maxLookupDigests)+" digests per lookup"))
		return
	}
	for _, d := range req.Digests {
		if _, err := report.ParseDigest(d); err != nil {
			writeError(w, r, err)
			return
		}
	}
	found, err := s.cfg.Store.Lookup(r.Context(), req.Digests)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := api.LookupResponse{Reports: make([]api.LookupEntry, len(found))}
	for i, f := range found {
		resp.Reports[i] = api.LookupEntry{Digest: f.Digest, ScannedAt: f.ScannedAt}
	}
	writeJSON(w, http.StatusOK, resp)
}
