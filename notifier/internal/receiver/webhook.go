package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// The notification event a webhook receives.
const (
	TypeNotification = "dev.crowsnest.notification.v1"
	SourceNotifier   = "crowsnest/notifier"
	// SignatureHeader carries the request's signature when the receiver
	// has an HMAC key: "t=<unix seconds>,v1=<hex>" in structured mode,
	// "t=<unix seconds>,v2=<hex>" in binary mode (see Sign, SignBinary).
	SignatureHeader = "X-Crowsnest-Signature"
)

// Notification is the data of a notification event.
type Notification struct {
	Route   string             `json:"route"`
	Items   []NotificationItem `json:"items"`
	Omitted int                `json:"omitted,omitempty"`
}

// NotificationItem is an item with its text and dashboard link.
type NotificationItem struct {
	state.Item
	Title     string `json:"title"`
	Dashboard string `json:"dashboard,omitempty"`
}

// CloudEvent is a structured-mode CloudEvents 1.0 envelope.
type CloudEvent struct {
	SpecVersion     string       `json:"specversion"`
	ID              string       `json:"id"`
	Source          string       `json:"source"`
	Type            string       `json:"type"`
	Subject         string       `json:"subject"`
	Time            time.Time    `json:"time"`
	DataContentType string       `json:"datacontenttype"`
	Data            Notification `json:"data"`
}

// Event renders a group as a CloudEvent whose id is the group id: a
// resent group is the same event, which a consumer deduplicates by id.
func Event(g *state.Group, dashboard string) CloudEvent {
	n := Notification{Route: g.Route, Omitted: g.Omitted}
	for _, it := range g.Items {
		n.Items = append(n.Items, NotificationItem{Item: it, Title: Title(it), Dashboard: ImageLink(dashboard, it.Digest)})
	}
	return CloudEvent{SpecVersion: "1.0", ID: g.ID, Source: SourceNotifier, Type: TypeNotification, Subject: g.Route,
		Time: g.Due.UTC(), DataContentType: "application/json", Data: n}
}

type webhook struct {
	url, mode string
	key       []byte
	now       func() time.Time
}

func (w *webhook) request(ctx context.Context, g *state.Group, dashboard string) (*http.Request, error) {
	ev := Event(g, dashboard)
	var body []byte
	var err error
	if w.mode == "binary" {
		body, err = json.Marshal(ev.Data)
	} else {
		body, err = json.Marshal(ev)
	}
	if err != nil {
		return nil, fmt.Errorf("encode notification: %w", err)
	}
	req, err := newRequest(ctx, w.url, body)
	if err != nil {
		return nil, err
	}
	if w.mode == "binary" {
		req.Header.Set("Content-Type", "application/json")
		for k, v := range map[string]string{"specversion": ev.SpecVersion, "id": ev.ID, "source": ev.Source, "type": ev.Type,
			"subject": ev.Subject, "time": ev.Time.Format(time.RFC3339Nano)} {
			req.Header.Set("ce-"+k, v)
		}
		if len(w.key) > 0 {
			req.Header.Set(SignatureHeader, SignBinary(w.key, w.now(), req.Header, body))
		}
		return req, nil
	}
	req.Header.Set("Content-Type", "application/cloudevents+json")
	if len(w.key) > 0 {
		req.Header.Set(SignatureHeader, Sign(w.key, w.now(), body))
	}
	return req, nil
}
