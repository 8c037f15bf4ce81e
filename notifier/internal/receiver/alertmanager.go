package receiver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/notifier/internal/config"
	"github.com/crowsnest-dev/crowsnest/notifier/internal/state"
)

// Alert is Alertmanager's v2 postableAlert.
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// LabelGroup is the label carrying the group id: resending a group posts
// alerts with the same labels, which Alertmanager merges into the same
// alerts instead of notifying twice.
const LabelGroup = "crowsnest_group"

var alertNames = map[string]string{
	config.KindNew:          "CrowsnestNewVulnerability",
	config.KindKEV:          "CrowsnestVulnerabilityListedInKEV",
	config.KindRunning:      "CrowsnestVulnerableWorkloadStarted",
	config.KindResolved:     "CrowsnestVulnerabilityResolved",
	config.KindScanFailures: "CrowsnestScansFailing",
}

// Alerts renders a group as Alertmanager alerts, one per item. Times are
// the group's due time, so a resent group posts identical alerts.
func Alerts(g *state.Group, dashboard string, duration time.Duration) []Alert {
	out := make([]Alert, 0, len(g.Items))
	for _, it := range g.Items {
		labels := map[string]string{
			"alertname": alertNames[it.Kind], "namespace": it.Namespace, "route": g.Route, LabelGroup: g.ID,
		}
		if it.Digest != "" {
			labels["digest"] = it.Digest
			labels["image"] = it.Image
		}
		if sev := Severity(it); sev != "" {
			labels["severity"] = sev
		}
		var ids []string
		for _, f := range it.Findings {
			ids = append(ids, f.ID)
		}
		if len(ids) > 0 {
			labels["vulnerabilities"] = strings.Join(ids, ",")
		}
		a := Alert{
			Labels:       labels,
			Annotations:  map[string]string{"summary": Title(it), "description": strings.Join(Lines(it), "\n")},
			StartsAt:     g.Due.UTC(),
			EndsAt:       g.Due.Add(duration).UTC(),
			GeneratorURL: ImageLink(dashboard, it.Digest),
		}
		if a.GeneratorURL != "" {
			a.Annotations["dashboard"] = a.GeneratorURL
		}
		out = append(out, a)
	}
	return out
}

type alertmanager struct {
	url      string
	token    string
	duration time.Duration
}

func (a *alertmanager) request(ctx context.Context, g *state.Group, dashboard string) (*http.Request, error) {
	body, err := json.Marshal(Alerts(g, dashboard, a.duration))
	if err != nil {
		return nil, fmt.Errorf("encode alerts: %w", err)
	}
	req, err := newRequest(ctx, strings.TrimRight(a.url, "/")+"/api/v2/alerts", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return req, nil
}
