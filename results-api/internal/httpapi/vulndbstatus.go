package httpapi

import (
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/results-api/api"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// getVulnDB answers GET /api/v1/vulndb: the DB the matcher serves (as its
// last announcement said) and the reports the caller may read counted by
// the DB build they were matched against. The counts go through the
// store's scope like every other read.
func (s *Server) getVulnDB(w http.ResponseWriter, r *http.Request) {
	st, err := s.cfg.Store.VulnDBStatus(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, vulnDBStatus(st, s.now()))
}

// vulnDBStatus renders st at now: the served DB's age, which build is the
// served one, and how many reports are on another (stale).
func vulnDBStatus(st *store.VulnDBStatus, now time.Time) api.VulnDBStatus {
	out := api.VulnDBStatus{Builds: make([]api.VulnDBBuildCount, len(st.Builds))}
	if d := st.Served; d != nil {
		out.Served = &api.ServedVulnDB{Built: d.Built, Schema: d.Schema, Checksum: d.Checksum, Source: d.Source,
			AnnouncedAt: d.AnnouncedAt, AgeSeconds: max(0, int64(now.Sub(d.Built)/time.Second))}
		if d.GrypeVersion != "" {
			v := d.GrypeVersion
			out.Served.GrypeVersion = &v
		}
	}
	for i, b := range st.Builds {
		current := st.Served != nil && sameBuild(b.Built, st.Served.Built)
		out.Builds[i] = api.VulnDBBuildCount{Built: b.Built, Schema: b.Schema, Reports: b.Reports, Current: current}
		out.Reports += b.Reports
		if st.Served != nil && !current {
			out.Stale += b.Reports
		}
	}
	return out
}

// sameBuild reports whether a stored build time (text, RFC 3339 as the
// BOM, the uploader or the matcher wrote it) is built.
func sameBuild(stored string, built time.Time) bool {
	t, err := time.Parse(time.RFC3339, stored)
	return err == nil && t.Equal(built)
}
