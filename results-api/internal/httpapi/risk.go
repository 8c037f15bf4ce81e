package httpapi

import (
	"net/http"
	"strconv"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// riskQuery reads the kev (true/false) and minEpss (0 to 1) filters.
func riskQuery(r *http.Request) (store.RiskFilter, error) {
	q := r.URL.Query()
	var f store.RiskFilter
	if v := q.Get("kev"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, badQuery("kev must be true or false")
		}
		f.KEV = b
	}
	if v := q.Get("minEpss"); v != "" {
		e, err := strconv.ParseFloat(v, 64)
		if err != nil || e < 0 || e > 1 {
			return f, badQuery("minEpss must be a number from 0 to 1")
		}
		f.MinEPSS = &e
	}
	return f, nil
}
