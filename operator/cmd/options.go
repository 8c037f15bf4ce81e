package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"

	"github.com/crowsnest-dev/crowsnest/operator/internal/controller/clusterscanner"
	"github.com/crowsnest-dev/crowsnest/operator/internal/controller/scanner"
	"github.com/crowsnest-dev/crowsnest/operator/internal/inventory"
	"github.com/crowsnest-dev/crowsnest/operator/internal/scanjob"
)

// Options is the operator's configuration: every field is a flag, and every
// flag takes its default from a CROWSNEST_* environment variable.
type Options struct {
	MetricsAddr             string
	MetricsSecure           bool
	MetricsCertDir          string
	WatchNamespaces         namespaceList
	ProbeAddr               string
	PprofAddr               string
	LeaderElect             bool
	LeaderElectionNamespace string
	ResultsAPIURL           string
	UploaderAPIURL          string
	ResultsAPITokenFile     string
	LookupCacheTTL          time.Duration
	LookupTimeout           time.Duration
	LookupRetry             time.Duration
	NATSURL                 string
	NATS                    eventsv1.Credentials
	PublishTimeout          time.Duration
	PublishRetry            time.Duration
	Inventory               bool
	GrypeImage              string
	InsecureRegistries      string
	VulnDBURL               string
	Kubeconfig              string
	UploaderImage           string
	ScanServiceAccount      string
	OperatorNamespace       string
	ScanNetworkPolicy       string
	ScanNetworkPolicyName   string
	JobTTL                  time.Duration
	RetryBackoff            time.Duration
	RetryBackoffMax         time.Duration
	StuckGrace              time.Duration
	Workers                 int
	MaxConcurrentScans      int
	RescansPerMinute        int
	RescanJitter            float64
	ScanPod                 scanjob.Scheduling
	LogFormat               string
	LogLevel                string
	// Zap holds controller-runtime's --zap-* flags; each one given wins
	// over --log-format and --log-level.
	Zap zap.Options

	// scanNetworkPolicy is ScanNetworkPolicy's content, read by Validate.
	scanNetworkPolicy *networkingv1.NetworkPolicySpec
}

// BindFlags registers every option on fs.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables)")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS to callers whose bearer token may get the non-resource URL /metrics (TokenReview + SubjectAccessReview); false: plain HTTP, no authentication, for a loopback address only")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "folder with tls.crt and tls.key for the metrics endpoint, reloaded on change (default: a self-signed certificate made at start)")
	fs.Var(&o.WatchNamespaces, "watch-namespaces", "comma-separated `namespaces` whose Scanners are served and where scan Jobs run; the operator then needs a Role in each, not a ClusterRole (empty: every namespace)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof endpoints, unauthenticated: a loopback address only, for profiling (0 disables)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "elect a leader through a Lease so only one replica acts")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the Pod's namespace)")
	fs.StringVar(&o.ResultsAPIURL, "results-api-url", "", "base URL of results-api, e.g. http://crowsnest-results-api:8080 (required)")
	fs.StringVar(&o.UploaderAPIURL, "uploader-api-url", "", "results-api URL given to the uploader in scan Jobs (default: --results-api-url)")
	fs.StringVar(&o.ResultsAPITokenFile, "results-api-token-file", "", "file holding a bearer token for the lookup, if results-api requires one")
	fs.DurationVar(&o.LookupCacheTTL, "lookup-cache-ttl", 30*time.Second, "how long a lookup answer is reused")
	fs.DurationVar(&o.LookupTimeout, "lookup-timeout", 10*time.Second, "timeout of one lookup request")
	fs.DurationVar(&o.LookupRetry, "lookup-retry", 5*time.Second, "first wait after a failed lookup; doubles up to 1m")
	fs.StringVar(&o.NATSURL, "nats-url", "", "NATS URL for events, e.g. nats://nats:4222 (empty: no events)")
	fs.StringVar(&o.NATS.User, "nats-user", "", "NATS user (the chart's bundled NATS: operator), with --nats-password-file")
	fs.StringVar(&o.NATS.PasswordFile, "nats-password-file", "", "file holding the NATS user's password")
	fs.StringVar(&o.NATS.CredsFile, "nats-creds", "", "NATS .creds file (JWT and NKey seed), instead of user and password")
	fs.StringVar(&o.NATS.NKeyFile, "nats-nkey-file", "", "file holding an NKey seed, instead of user and password")
	fs.DurationVar(&o.PublishTimeout, "publish-timeout", 5*time.Second, "timeout of one event publish")
	fs.DurationVar(&o.PublishRetry, "publish-retry", 15*time.Second, "wait before retrying undelivered events")
	fs.BoolVar(&o.Inventory, "inventory", true, "publish crowsnest.inventory.snapshot: per namespace, which workloads run which digests (needs --nats-url; list and watch of ReplicaSets, Jobs and, cluster-wide, Namespaces)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig file (default: the KUBECONFIG variable, the in-cluster config, then ~/.kube/config)")
	fs.StringVar(&o.VulnDBURL, "vulndb-url", "", "base URL scan Jobs fetch Grype's vulnerability DB from (GRYPE_DB_UPDATE_URL), e.g. the matcher's http://crowsnest-matcher:8080/vulndb (empty: every scan downloads it from Grype's public URL)")
	fs.StringVar(&o.GrypeImage, "grype-image", scanjob.DefaultGrypeImage, "Grype image of scan Jobs (a Scanner's spec.grypeImage wins)")
	fs.StringVar(&o.UploaderImage, "uploader-image", "", "uploader image of scan Jobs (required)")
	fs.StringVar(&o.InsecureRegistries, "insecure-registries", "", "comma-separated registry `hosts` (host:port) Grype pulls scanned images from over plain HTTP: development registries only")
	fs.StringVar(&o.ScanServiceAccount, "scan-service-account", "", "service account of scan Pods; its projected token authenticates the upload (default: the namespace's default)")
	fs.StringVar(&o.ScanNetworkPolicy, "scan-network-policy", "", "file with the NetworkPolicy spec of scan Pods (YAML; podSelector exactly the scan Pods' labels), kept in every namespace a ClusterScanner covers (the chart renders it; empty: none)")
	fs.StringVar(&o.ScanNetworkPolicyName, "scan-network-policy-name", "crowsnest-scan", "name of the scan NetworkPolicy in covered namespaces (one of this name the operator did not create is left as it is)")
	fs.StringVar(&o.OperatorNamespace, "operator-namespace", "", "the operator's own namespace, which a ClusterScanner leaves out while its spec.excludeNamespaces is unset (the chart passes the Pod's namespace)")
	fs.DurationVar(&o.JobTTL, "job-ttl", 2*time.Hour, "ttlSecondsAfterFinished of scan Jobs: at least --retry-backoff-max + 1m")
	fs.DurationVar(&o.RetryBackoff, "retry-backoff", time.Minute, "wait after a failed scan; doubles per attempt")
	fs.DurationVar(&o.RetryBackoffMax, "retry-backoff-max", time.Hour, "longest wait between scan attempts")
	fs.DurationVar(&o.StuckGrace, "stuck-grace", 2*time.Minute, "how long a scan Pod may wait on an image pull (ErrImagePull, ImagePullBackOff, InvalidImageName) or a CreateContainerConfigError, or a scan Job stay without a Pod the API server refused, before the scan is ended as failed (0: wait for the scan timeout)")
	fs.IntVar(&o.Workers, "workers", 2, "Scanners reconciled in parallel")
	fs.IntVar(&o.MaxConcurrentScans, "max-concurrent-scans", 10, "scan Jobs running at once in the whole cluster, shared fairly between Scanners, on top of each Scanner's spec.maxConcurrentScans (0: no cluster-wide cap)")
	fs.Float64Var(&o.RescanJitter, "rescan-jitter", 0.1, "spread of rescans: each digest's rescan interval moves by up to ± this fraction of it, the same for a digest every time (0: none, at most 0.5)")
	fs.IntVar(&o.RescansPerMinute, "rescans-per-minute", 60, "rescans started per minute in the whole cluster, so reports stored in one wave do not all come due at once (0: no limit)")
	fs.StringVar(&o.LogFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info or error")
	o.bindScanPodFlags(fs)
	o.Zap.BindFlags(fs)
}

// JobTTLMargin is how much longer than --retry-backoff-max a finished scan
// Job must be kept (--job-ttl). A failed Job holds its scan's attempt count;
// its retry is due at most --retry-backoff-max after it finished, and the
// operator replaces it then, give or take a reconcile's latency, the
// one-second resolution of Job condition times and the first lookup retries
// (--lookup-retry 5s doubling: 5+10+20s) when results-api blinks at that
// moment. A minute covers those. The Job's finalizer keeps the state even if
// the TTL runs out first, but a Job the TTL controller deleted lingers
// half-deleted until the retry; a TTL of 0 (delete at once) or below the
// backoff would do that to every failed Job.
const JobTTLMargin = time.Minute

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if o.ResultsAPIURL == "" {
		errs = append(errs, errors.New("--results-api-url is required"))
	}
	if o.UploaderImage == "" {
		errs = append(errs, errors.New("--uploader-image is required"))
	}
	if o.RetryBackoff <= 0 || o.RetryBackoffMax < o.RetryBackoff {
		errs = append(errs, errors.New("--retry-backoff must be > 0 and <= --retry-backoff-max"))
	}
	if minTTL := o.RetryBackoffMax + JobTTLMargin; o.JobTTL < minTTL || o.JobTTL.Seconds() > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("--job-ttl %v: want at least --retry-backoff-max (%v) + %v = %v, so that a failed scan Job is not "+
			"deleted before its retry replaces it (and at most %d seconds)", o.JobTTL, o.RetryBackoffMax, JobTTLMargin, minTTL, math.MaxInt32))
	}
	if o.RescanJitter < 0 || o.RescanJitter > 0.5 {
		errs = append(errs, fmt.Errorf("--rescan-jitter %v: want 0 to 0.5", o.RescanJitter))
	}
	if o.MaxConcurrentScans < 0 || o.RescansPerMinute < 0 {
		errs = append(errs, errors.New("--max-concurrent-scans and --rescans-per-minute must be >= 0"))
	}
	if o.VulnDBURL != "" {
		if u, err := url.Parse(o.VulnDBURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			errs = append(errs, fmt.Errorf("--vulndb-url %q: want an http(s) URL without credentials, e.g. http://crowsnest-matcher:8080/vulndb", o.VulnDBURL))
		}
	}
	if o.ScanNetworkPolicy != "" {
		spec, err := clusterscanner.LoadScanNetworkPolicy(o.ScanNetworkPolicy)
		if err != nil {
			errs = append(errs, fmt.Errorf("--scan-network-policy: %w", err))
		}
		o.scanNetworkPolicy = spec
		if msgs := validation.IsDNS1123Subdomain(o.ScanNetworkPolicyName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--scan-network-policy-name %q: %s", o.ScanNetworkPolicyName, strings.Join(msgs, "; ")))
		}
	}
	if o.PprofAddr != "0" && o.PprofAddr != "" {
		if host, _, err := net.SplitHostPort(o.PprofAddr); err != nil || (host != "localhost" && !net.ParseIP(host).IsLoopback()) {
			errs = append(errs, fmt.Errorf("--pprof-bind-address %q: want a loopback address such as 127.0.0.1:6060 (profiles are unauthenticated)", o.PprofAddr))
		}
	}
	if o.StuckGrace < 0 {
		errs = append(errs, errors.New("--stuck-grace must be >= 0"))
	}
	if o.LookupRetry <= 0 || o.PublishRetry <= 0 {
		errs = append(errs, errors.New("--lookup-retry and --publish-retry must be > 0"))
	}
	if err := validateScanPod(o.ScanPod); err != nil {
		errs = append(errs, err)
	}
	if o.LogFormat != "json" && o.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("--log-format %q: want json or console", o.LogFormat))
	}
	return errors.Join(errs...)
}

// EnvName is the environment variable that defaults a flag:
// --results-api-url → CROWSNEST_RESULTS_API_URL.
func EnvName(flagName string) string {
	return "CROWSNEST_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag whose environment variable is present, before
// the command line is parsed (so flags still win), and names the variable
// in each flag's help.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		f.Usage += " (env " + name + ")"
		if v := getenv(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// controllerOptions are the settings the Scanner controller applies.
func (o *Options) controllerOptions() scanner.Options {
	uploaderURL := o.UploaderAPIURL
	if uploaderURL == "" {
		uploaderURL = o.ResultsAPIURL
	}
	var insecure []string
	for _, r := range strings.Split(o.InsecureRegistries, ",") {
		if r = strings.TrimSpace(r); r != "" {
			insecure = append(insecure, r)
		}
	}
	return scanner.Options{
		InsecureRegistries: insecure, GrypeImage: o.GrypeImage, UploaderImage: o.UploaderImage, UploaderAPIURL: uploaderURL,
		VulnDBURL: o.VulnDBURL, ServiceAccount: o.ScanServiceAccount, JobTTL: o.JobTTL, RetryBase: o.RetryBackoff, RetryMax: o.RetryBackoffMax,
		LookupRetry: o.LookupRetry, PublishRetry: o.PublishRetry, Workers: o.Workers, StuckGrace: o.StuckGrace,
		MaxConcurrentScans: o.MaxConcurrentScans, RescansPerMinute: o.RescansPerMinute, RescanJitter: o.RescanJitter,
		WatchNamespaces: o.WatchNamespaces, ScanPod: o.ScanPod,
		Inventory: o.inventoryOptions(),
	}
}

// inventoryOptions leave the operator's own namespace out and read
// namespace labels only when the operator watches the whole cluster (a
// namespaced install cannot list Namespaces).
func (o *Options) inventoryOptions() inventory.Options {
	opts := inventory.Options{Enabled: o.Inventory, NamespaceLabels: len(o.WatchNamespaces) == 0, RetryBase: o.PublishRetry}
	if o.OperatorNamespace != "" {
		opts.Exclude = []string{o.OperatorNamespace}
	}
	return opts
}

// clusterScannerOptions are the settings the ClusterScanner controller
// applies: it keeps the scan service account and, when configured, the scan
// NetworkPolicy in every namespace it covers.
func (o *Options) clusterScannerOptions() clusterscanner.Options {
	return clusterscanner.Options{ServiceAccount: o.ScanServiceAccount, OperatorNamespace: o.OperatorNamespace,
		NetworkPolicy: o.scanNetworkPolicy, NetworkPolicyName: o.ScanNetworkPolicyName}
}

// readToken returns a function reading a bearer token file on each call.
func readToken(path string) func() (string, error) {
	return func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
}

// namespaceList is a comma-separated list of namespace names. Set replaces
// the list, so a flag overrides its environment default.
type namespaceList []string

func (l *namespaceList) String() string { return strings.Join(*l, ",") }

func (l *namespaceList) Set(v string) error {
	var out namespaceList
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" || slices.Contains(out, ns) {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
		out = append(out, ns)
	}
	*l = out
	return nil
}
