package httpapi

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
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
	// The wire limit equals the decompressed limit: gzip only ever shrinks
	// JSON, and ReadBody bounds the decompressed size separately.
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBOMBytes)
	raw, err := ingest.ReadBody(body, r.Header.Get("Content-Encoding"), s.cfg.MaxBOMBytes)
	if err != nil {
		s.reject(w, r, err)
		return
	}
	rep, err := ingest.Parse(raw, ingest.Options{Digest: digest, Image: image, Now: time.Now()})
	if err != nil {
		s.reject(w, r, err)
		return
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
	if !res.Unchanged {
		m.FindingsStored.Add(float64(rep.Findings))
	}
	s.cfg.Notifier.ReportStored(res.Summary)
	writeJSON(w, status, api.NewReportSummary(res.Summary))
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Metrics.ReportsIngested.WithLabelValues("rejected").Inc()
	writeError(w, r, err)
}

func (s *Server) getReport(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	order := store.FindingOrder(r.URL.Query().Get("sort"))
	switch order {
	case "":
		order = store.BySeverity
	case store.BySeverity, store.ByID, store.ByPackage:
	default:
		writeError(w, r, newError(http.StatusBadRequest, "invalid_query", "sort must be severity, id or package"))
		return
	}
	rep, err := s.cfg.Store.GetReport(r.Context(), digest, order)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NewReportDetail(rep))
}

func (s *Server) getBOM(w http.ResponseWriter, r *http.Request) {
	digest, err := digestParam(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	raw, err := s.cfg.Store.GetBOM(r.Context(), digest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.cyclonedx+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.Header().Set("Content-Disposition", `attachment; filename="`+digest[7:19]+`.cdx.json"`)
	_, _ = w.Write(raw)
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
