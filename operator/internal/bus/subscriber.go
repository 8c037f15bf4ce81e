package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// eventsInvalid counts received events dropped by validation. It is
// registered with controller-runtime's registry, so the manager's metrics
// endpoint serves it; results-api exports the same name.
var eventsInvalid = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "crowsnest_events_invalid_total", Help: "Received events that failed validation and were dropped, by subject and broken rule.",
}, []string{"subject", "reason"})

func init() { metrics.Registry.MustRegister(eventsInvalid) }

// OnReportDeleted calls fn with the digest of every valid
// crowsnest.report.deleted event, through a plain (non-durable) subscription
// on the publisher's connection. Missing one while disconnected loses
// nothing: a restarted or reconnected operator recomputes everything from
// the API anyway, and the reconciles that follow use fresh lookups. fn must
// not block for long.
//
// An event that fails eventsv1.Validate (not from results-api, dated in the
// future or long ago, without a valid digest, ...) is dropped, counted in
// crowsnest_events_invalid_total and logged once, without its payload.
func (p *JetStream) OnReportDeleted(fn func(digest string)) (func() error, error) {
	sub, err := p.nc.Subscribe(eventsv1.SubjectReportDeleted, func(m *nats.Msg) {
		ev, err := eventsv1.Parse(eventsv1.SubjectReportDeleted, m.Data, time.Now(), eventsv1.DefaultMaxSkew)
		if err != nil {
			p.rejected(ev, err)
			return
		}
		var data eventsv1.ReportDeleted
		if err := ev.Decode(&data); err != nil { // validated above: cannot happen
			p.rejected(ev, err)
			return
		}
		fn(data.Digest)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", eventsv1.SubjectReportDeleted, err)
	}
	return sub.Unsubscribe, nil
}

func (p *JetStream) rejected(ev eventsv1.Event, err error) {
	reason := eventsv1.Reason(err)
	if reason == "" {
		reason = eventsv1.ReasonPayload
	}
	eventsInvalid.WithLabelValues(eventsv1.SubjectReportDeleted, reason).Inc()
	id := ev.ID
	if len(id) > eventsv1.MaxIDLength {
		id = id[:eventsv1.MaxIDLength] + "…"
	}
	p.log.Info("dropping invalid event", "subject", eventsv1.SubjectReportDeleted, "id", id, "reason", reason, "error", err.Error())
}
