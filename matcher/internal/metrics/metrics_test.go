package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/matcher/internal/rematch"
	"github.com/crowsnest-dev/crowsnest/matcher/internal/vulndb"
)

type noDB struct{}

func (noDB) Active() (vulndb.DB, bool) { return vulndb.DB{}, false }

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return string(b)
}

// TestRematchMetrics: what a pass reports through rematch.Metrics is what
// Prometheus scrapes.
func TestRematchMetrics(t *testing.T) {
	m := New(noDB{}, nil)
	body := scrape(t, m)
	for _, want := range []string{
		`crowsnest_rematch_reports_total{result="failed"} 0`,
		"crowsnest_rematch_in_progress 0",
		"crowsnest_rematch_last_pass_timestamp_seconds 0",
		"crowsnest_events_pending 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("fresh registry lacks %q", want)
		}
	}
	if strings.Contains(body, "crowsnest_vulndb_age_seconds") {
		t.Error("DB age reported without a DB")
	}

	m.RematchStarted()
	if body := scrape(t, m); !strings.Contains(body, "crowsnest_rematch_in_progress 1") {
		t.Error("pass not in progress")
	}
	for _, o := range []rematch.Outcome{rematch.OutcomeChanged, rematch.OutcomeChanged, rematch.OutcomeUnchanged, rematch.OutcomeFailed} {
		m.Report(o, time.Millisecond)
	}
	end := time.Unix(1_800_000_000, 0)
	m.PassDone(rematch.Result{FinishedAt: end, Duration: 90 * time.Second, Finished: true})
	m.PublishFailed("crowsnest.rematch.done")
	m.Pending(2)
	body = scrape(t, m)
	for _, want := range []string{
		`crowsnest_rematch_reports_total{result="changed"} 2`,
		`crowsnest_rematch_reports_total{result="unchanged"} 1`,
		`crowsnest_rematch_reports_total{result="failed"} 1`,
		"crowsnest_rematch_in_progress 0",
		"crowsnest_rematch_last_pass_timestamp_seconds 1.8e+09",
		"crowsnest_rematch_pass_seconds_sum 90",
		"crowsnest_rematch_pass_seconds_count 1",
		`crowsnest_events_publish_failures_total{subject="crowsnest.rematch.done"} 1`,
		"crowsnest_events_pending 2",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
