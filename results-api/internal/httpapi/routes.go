package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
)

// Routes builds the whole HTTP surface. Every route here is also a path
// and method of api/openapi.yaml; TestRoutesMatchOpenAPI holds them together.
func (s *Server) Routes() chi.Router {
	r := chi.NewRouter()
	lim := s.cfg.Limits
	r.Use(requestID, s.requestIDHeader, s.recoverer, s.observe, deadline(lim.RequestTimeout))

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	if !s.cfg.NoMetrics {
		r.Method(http.MethodGet, "/metrics", s.metricsHandler())
	}

	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/openapi.yaml", serveOpenAPI)
		read := r.With(s.requireReader)
		read.Get("/access", s.getAccess)
		r.Route("/reports", func(r chi.Router) {
			r.With(s.requireReader).Get("/", s.listReports)
			r.With(s.limitBody(lookupBodyLimit), s.requireReader).Post("/lookup", s.lookupReports)
			// As …/{digest}/vulndb: update only, rematch and admin scopes.
			r.With(s.limitBody(vulnDBsBodyLimit), updateOnly, s.requireWriter).Put("/vulndb", s.putVulnDBs)
			r.Route("/{digest}", func(r chi.Router) {
				r.With(deadline(lim.UploadTimeout), s.requireWriter).Put("/", s.putReport)
				read := r.With(s.requireReader, s.visibleDigest)
				read.Get("/", s.getReport)
				r.With(s.requireWriter).Delete("/", s.deleteReport)
				read.With(deadline(lim.DownloadTimeout)).Get("/bom", s.getBOM)
				read.Get("/changes", s.listDigestChanges)
				read.With(deadline(lim.DownloadTimeout)).Get("/sarif", s.getSARIF)
				read.With(deadline(lim.DownloadTimeout)).Get("/findings.csv", s.getReportCSV)
				read.Get("/vex", s.getVEX)
				r.With(s.limitBody(vulnDBBodyLimit), updateOnly, s.requireWriter).Put("/vulndb", s.putVulnDB)
			})
		})
		read.Get("/changes", s.listChanges)
		read.With(deadline(lim.DownloadTimeout)).Get("/findings.csv", s.listFindingsCSV)
		read.Get("/vulnerabilities/{id}", s.getVulnerability)
		read.Get("/scans", s.listScans)
		read.Get("/exceptions/audit", s.getExceptionAudit)
		read.Get("/stats", s.getStats)
		read.Get("/vulndb", s.getVulnDB)
		read.Get("/lifecycle", s.getLifecycle)
		read.Get("/workloads", s.listWorkloads)
		// No deadline: the hub times each write and ping of the WebSocket.
		r.With(deadline(0), s.requireReader).Get("/events", s.streamEvents)
		r.NotFound(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, r, errNotFoundRoute)
		})
		r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, r, errMethodNotAllowed)
		})
	})
	if s.cfg.UI != nil {
		r.NotFound(s.cfg.UI.ServeHTTP)
	}
	return r
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.OpenAPI)
}
