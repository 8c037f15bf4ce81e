package httpapi

import (
	"errors"
	"net/http"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/authz"
)

// MetricsAuthorizer decides who may scrape /metrics (authz.Scrapers). Its
// errors: authz.ErrNoCredentials and authn.ErrBadToken (401),
// authz.ErrForbidden (403), authn.ErrAuthUnavailable (503).
type MetricsAuthorizer interface {
	AuthorizeScrape(r *http.Request) error
}

var errMetricsForbidden = newError(http.StatusForbidden, "forbidden",
	"the bearer token may not get /metrics (bind ClusterRole <release>-metrics-reader)")

// ProtectMetrics serves metrics only to scrapers a allows; nil a serves
// them to anyone (--metrics-auth=open). The vulnerability metrics name
// every namespace and the worst vulnerabilities of the fleet, so they are
// no less private than the reports.
func ProtectMetrics(metrics http.Handler, a MetricsAuthorizer) http.Handler {
	if a == nil {
		return metrics
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := a.AuthorizeScrape(r)
		switch {
		case err == nil:
			metrics.ServeHTTP(w, r)
		case errors.Is(err, authz.ErrNoCredentials):
			w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-results-api"`)
			writeError(w, r, errNoCredentials)
		case errors.Is(err, authn.ErrAuthUnavailable):
			writeError(w, r, err)
		case errors.Is(err, authz.ErrForbidden):
			writeError(w, r, errMetricsForbidden)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="crowsnest-results-api", error="invalid_token"`)
			writeError(w, r, errInvalidToken)
		}
	})
}
