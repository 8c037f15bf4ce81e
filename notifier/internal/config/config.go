package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// MaxFileBytes bounds the configuration file and every secret file.
const MaxFileBytes = 1 << 20

// Config is the whole configuration file.
type Config struct {
	Receivers    []Receiver   `json:"receivers"`
	Routes       []Route      `json:"routes"`
	ScanFailures ScanFailures `json:"scanFailures"`
}

// Receiver is one destination; exactly one of Alertmanager, Slack and
// Webhook is set.
type Receiver struct {
	Name         string        `json:"name"`
	Alertmanager *Alertmanager `json:"alertmanager,omitempty"`
	Slack        *Slack        `json:"slack,omitempty"`
	Webhook      *Webhook      `json:"webhook,omitempty"`

	// RatePerMinute caps the messages sent to the receiver (default 30).
	RatePerMinute int `json:"ratePerMinute,omitempty"`
	// Timeout is one attempt's deadline (default 10s).
	Timeout Duration `json:"timeout,omitempty"`
	// MaxAttempts bounds the attempts at one message, retried with
	// exponential backoff on 5xx, 429, timeouts and connection errors
	// (default 6). A message that fails them all is dead-lettered.
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// QueueSize bounds the messages waiting for the receiver (default 100).
	QueueSize int `json:"queueSize,omitempty"`
}

// Alertmanager posts alerts to an Alertmanager's v2 API.
type Alertmanager struct {
	// URL is the Alertmanager base URL; alerts go to URL/api/v2/alerts.
	URL             string `json:"url"`
	BearerTokenFile string `json:"bearerTokenFile,omitempty"`
	// AlertDuration sets endsAt = startsAt + AlertDuration (default 24h):
	// a notification is an event, not a condition that stays firing.
	AlertDuration Duration `json:"alertDuration,omitempty"`
}

// Slack posts Block Kit messages to an incoming webhook.
type Slack struct {
	// WebhookURLFile holds the incoming webhook URL (it is a secret).
	WebhookURLFile string `json:"webhookURLFile"`
}

// Webhook posts a CloudEvents 1.0 event over HTTP.
type Webhook struct {
	URL string `json:"url"`
	// Mode is "structured" (application/cloudevents+json, default) or
	// "binary" (ce-* headers, the data as body).
	Mode string `json:"mode,omitempty"`
	// HMACKeyFile, when set, signs each request (see receiver.Sign and
	// receiver.SignBinary).
	HMACKeyFile string `json:"hmacKeyFile,omitempty"`
}

// Route sends the notifications that match it to one receiver.
type Route struct {
	Name     string `json:"name"`
	Receiver string `json:"receiver"`
	// Namespaces are globs (path.Match); empty matches every namespace.
	Namespaces []string `json:"namespaces,omitempty"`
	// NamespaceSelector is a Kubernetes label selector over the namespace
	// labels of the inventory; ANDed with Namespaces.
	NamespaceSelector string `json:"namespaceSelector,omitempty"`
	// MinSeverity is the lowest severity notified (default critical).
	MinSeverity string `json:"minSeverity,omitempty"`
	// Causes filters findings by why the report changed: scan, rescan,
	// rematch (default: all).
	Causes []string `json:"causes,omitempty"`
	// FixableOnly notifies only findings with a known fixed-in version.
	FixableOnly bool `json:"fixableOnly,omitempty"`
	// KEV notifies only findings listed in CISA's Known Exploited
	// Vulnerabilities catalog.
	KEV bool `json:"kev,omitempty"`
	// MinEPSS, when set, notifies only findings with an EPSS score at or
	// above it (0 to 1); a finding without a score does not match.
	MinEPSS *float64 `json:"minEpss,omitempty"`
	// Kinds are the notifications of the route (default new, kev, running,
	// scanFailures; resolved is opt-in).
	Kinds []string `json:"kinds,omitempty"`
	// GroupWait is the debounce window: what the route collects in it goes
	// out as one message (default 30s).
	GroupWait Duration `json:"groupWait,omitempty"`

	selector labels.Selector
}

// ScanFailures is when failed scans in a namespace are notified: Threshold
// failed job.done events within Window.
type ScanFailures struct {
	Threshold int      `json:"threshold,omitempty"` // default 3
	Window    Duration `json:"window,omitempty"`    // default 1h
}

// Notification kinds.
const (
	KindNew          = "new"          // a new finding at or above MinSeverity in a running image
	KindKEV          = "kev"          // a finding of a running image newly listed in CISA KEV
	KindRunning      = "running"      // a newly running workload whose image has critical findings
	KindResolved     = "resolved"     // a resolved critical finding
	KindScanFailures = "scanFailures" // scans failing repeatedly in a namespace
)

// Severities, worst first, as findings.changed names them.
var Severities = []string{"critical", "high", "medium", "low", "negligible", "unknown"}

// Rank orders severities: critical is 5, unknown 0, anything else -1.
func Rank(sev string) int {
	for i, s := range Severities {
		if s == sev {
			return len(Severities) - 1 - i
		}
	}
	return -1
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Load reads, defaults and checks the configuration file.
func Load(file string) (*Config, error) {
	b, err := ReadBounded(file)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", file, err)
	}
	return c, nil
}

// Parse decodes (unknown fields are errors), defaults and checks a
// configuration; every problem found is reported, joined.
func Parse(b []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, err
	}
	if err := c.defaultAndCheck(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) defaultAndCheck() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Receivers) == 0 {
		bad("no receivers")
	}
	if len(c.Routes) == 0 {
		bad("no routes")
	}
	receivers := map[string]bool{}
	for i := range c.Receivers {
		r := &c.Receivers[i]
		where := fmt.Sprintf("receivers[%d] %q", i, r.Name)
		if !nameRE.MatchString(r.Name) {
			bad("%s: name must be a DNS label (lowercase letters, digits, '-')", where)
		}
		if receivers[r.Name] {
			bad("%s: duplicate name", where)
		}
		receivers[r.Name] = true
		for _, e := range r.check() {
			bad("%s: %w", where, e)
		}
	}
	routes := map[string]bool{}
	for i := range c.Routes {
		r := &c.Routes[i]
		where := fmt.Sprintf("routes[%d] %q", i, r.Name)
		if !nameRE.MatchString(r.Name) {
			bad("%s: name must be a DNS label (lowercase letters, digits, '-')", where)
		}
		if routes[r.Name] {
			bad("%s: duplicate name", where)
		}
		routes[r.Name] = true
		if !receivers[r.Receiver] {
			bad("%s: receiver %q is not defined", where, r.Receiver)
		}
		for _, e := range r.check() {
			bad("%s: %w", where, e)
		}
	}
	if c.ScanFailures.Threshold == 0 {
		c.ScanFailures.Threshold = 3
	}
	if c.ScanFailures.Window == 0 {
		c.ScanFailures.Window = Duration(time.Hour)
	}
	if c.ScanFailures.Threshold < 1 || c.ScanFailures.Window < 0 {
		bad("scanFailures: threshold and window must be positive")
	}
	return errors.Join(errs...)
}

func (r *Receiver) check() []error {
	var errs []error
	set := 0
	if r.Alertmanager != nil {
		set++
		if err := checkURL(r.Alertmanager.URL); err != nil {
			errs = append(errs, fmt.Errorf("alertmanager.url: %w", err))
		}
		if r.Alertmanager.AlertDuration == 0 {
			r.Alertmanager.AlertDuration = Duration(24 * time.Hour)
		}
	}
	if r.Slack != nil {
		set++
		if r.Slack.WebhookURLFile == "" {
			errs = append(errs, errors.New("slack.webhookURLFile is required (the webhook URL is a secret)"))
		}
	}
	if r.Webhook != nil {
		set++
		if err := checkURL(r.Webhook.URL); err != nil {
			errs = append(errs, fmt.Errorf("webhook.url: %w", err))
		}
		switch r.Webhook.Mode {
		case "":
			r.Webhook.Mode = "structured"
		case "structured", "binary":
		default:
			errs = append(errs, fmt.Errorf("webhook.mode %q: want structured or binary", r.Webhook.Mode))
		}
	}
	if set != 1 {
		errs = append(errs, fmt.Errorf("set exactly one of alertmanager, slack, webhook (%d set)", set))
	}
	defInt(&r.RatePerMinute, 30)
	defInt(&r.MaxAttempts, 6)
	defInt(&r.QueueSize, 100)
	if r.Timeout == 0 {
		r.Timeout = Duration(10 * time.Second)
	}
	if r.RatePerMinute < 1 || r.MaxAttempts < 1 || r.QueueSize < 1 || r.Timeout < 0 {
		errs = append(errs, errors.New("ratePerMinute, maxAttempts, queueSize and timeout must be positive"))
	}
	return errs
}

func (r *Route) check() []error {
	var errs []error
	for _, g := range r.Namespaces {
		if _, err := path.Match(g, ""); err != nil {
			errs = append(errs, fmt.Errorf("namespaces: glob %q: %w", g, err))
		}
	}
	sel, err := labels.Parse(r.NamespaceSelector)
	if err != nil {
		errs = append(errs, fmt.Errorf("namespaceSelector: %w", err))
	}
	r.selector = sel
	if r.MinSeverity == "" {
		r.MinSeverity = "critical"
	}
	if Rank(r.MinSeverity) < 0 {
		errs = append(errs, fmt.Errorf("minSeverity %q: want one of %s", r.MinSeverity, strings.Join(Severities, ", ")))
	}
	// Written so that NaN fails too.
	if r.MinEPSS != nil && !(*r.MinEPSS >= 0 && *r.MinEPSS <= 1) {
		errs = append(errs, fmt.Errorf("minEpss %v: want an EPSS probability from 0 to 1", *r.MinEPSS))
	}
	for _, c := range r.Causes {
		if c != "scan" && c != "rescan" && c != "rematch" {
			errs = append(errs, fmt.Errorf("causes: %q: want scan, rescan or rematch", c))
		}
	}
	if len(r.Kinds) == 0 {
		r.Kinds = []string{KindNew, KindKEV, KindRunning, KindScanFailures}
	}
	for _, k := range r.Kinds {
		if k != KindNew && k != KindKEV && k != KindRunning && k != KindResolved && k != KindScanFailures {
			errs = append(errs, fmt.Errorf("kinds: %q: want new, kev, running, resolved or scanFailures", k))
		}
	}
	if r.GroupWait == 0 {
		r.GroupWait = Duration(30 * time.Second)
	}
	if r.GroupWait < 0 {
		errs = append(errs, errors.New("groupWait must be positive"))
	}
	return errs
}

func defInt(p *int, def int) {
	if *p == 0 {
		*p = def
	}
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http or https URL", s)
	}
	return nil
}

// ReadBounded reads a file of at most MaxFileBytes.
func ReadBounded(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, MaxFileBytes+1)
	n, err := readFull(f, b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if n > MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", file, MaxFileBytes)
	}
	return b[:n], nil
}

// ReadSecret reads a secret file, trimmed; empty is an error.
func ReadSecret(file string) (string, error) {
	b, err := ReadBounded(file)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", file)
	}
	return s, nil
}

// Duration is a time.Duration written as "30s", "5m".
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string like \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
