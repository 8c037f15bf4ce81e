package bus

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

// OnReportDeleted calls fn with the digest of every crowsnest.report.deleted
// event, through a plain (non-durable) subscription on the publisher's
// connection. Missing one while disconnected loses nothing: a restarted or
// reconnected operator recomputes everything from the API anyway, and the
// reconciles that follow use fresh lookups. fn must not block for long.
func (p *JetStream) OnReportDeleted(fn func(digest string)) (func() error, error) {
	sub, err := p.nc.Subscribe(eventsv1.SubjectReportDeleted, func(m *nats.Msg) {
		var ev eventsv1.Event
		var data eventsv1.ReportDeleted
		if json.Unmarshal(m.Data, &ev) != nil || ev.Decode(&data) != nil || data.Digest == "" {
			return
		}
		fn(data.Digest)
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", eventsv1.SubjectReportDeleted, err)
	}
	return sub.Unsubscribe, nil
}
