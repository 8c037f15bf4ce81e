package values

// Values is the whole values.yaml of helm/crowsnest.
type Values struct {
	Global         Global         `json:"global"`
	Operator       Operator       `json:"operator"`
	Matcher        Matcher        `json:"matcher"`
	Notifier       Notifier       `json:"notifier"`
	ResultsAPI     ResultsAPI     `json:"resultsApi"`
	NATS           NATS           `json:"nats"`
	Postgres       Postgres       `json:"postgres"`
	Monitoring     Monitoring     `json:"monitoring"`
	DefaultScanner DefaultScanner `json:"defaultScanner"`
}

// Global values are shared with every subchart.
type Global struct {
	NameOverride     string         `json:"nameOverride" jsonschema:"description=app.kubernetes.io/name of every object (default crowsnest),pattern=^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?$,maxLength=40"`
	FullnameOverride string         `json:"fullnameOverride" jsonschema:"description=Prefix of every object's name instead of the release name,pattern=^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?$,maxLength=40"`
	ImagePullSecrets []string       `json:"imagePullSecrets" jsonschema:"description=Names of pull Secrets for every Crowsnest Pod"`
	ImageRegistry    string         `json:"imageRegistry" jsonschema:"description=Pull every image (Crowsnest's and Grype's and NATS and Postgres) as <imageRegistry>/<last path segment of its repository> (a mirror filled by make images-push REGISTRY=<imageRegistry>); empty: each repository as set,pattern=^$|^[a-z0-9][a-z0-9.:-]*(/[a-z0-9._-]+)*$"`
	NATS             ExternalNATS   `json:"nats"`
	ResultsAPI       GlobalAPI      `json:"resultsApi" jsonschema:"description=results-api settings the operator needs too"`
	Database         ExternalDB     `json:"database"`
	Scan             Scan           `json:"scan"`
	ClusterScanner   ClusterScanner `json:"clusterScanner" jsonschema:"description=A ClusterScanner named after the release: a Scanner and the scan ServiceAccount in every namespace it covers; results-api then accepts scan Pods of every namespace. Needs operator.clusterWide"`
	NetworkPolicy    NetworkPolicy  `json:"networkPolicy"`
	VulnDB           VulnDB         `json:"vulnDB" jsonschema:"description=Where scan Jobs get Grype's vulnerability DB"`
}

// VulnDB is where scan Jobs get Grype's vulnerability DB (operator
// --vulndb-url).
type VulnDB struct {
	Source string `json:"source" jsonschema:"description=matcher: the chart's matcher serves one DB to every scan Job and re-matches stored SBOMs when it changes; url: your mirror in Grype's listing format; public: every scan downloads Grype's public DB,enum=matcher,enum=url,enum=public"`
	URL    string `json:"url" jsonschema:"description=Base URL of your mirror (source=url); Grype fetches <url>/v6/latest.json,pattern=^$|^https?://[^@/]+(/.*)?$"`
}

// Matcher is the matcher (global.vulnDB.source=matcher).
type Matcher struct {
	Component
	UpstreamURL        string             `json:"upstreamURL" jsonschema:"description=Grype DB listing the matcher fetches from; empty: Grype's public URL; off: none (air gap: import archives),pattern=^$|^off$|^https?://"`
	CheckInterval      string             `json:"checkInterval" jsonschema:"description=Time between checks of the upstream listing (--check-interval),pattern=^([0-9]+(ms|s|m|h))+$"`
	RematchConcurrency int                `json:"rematchConcurrency" jsonschema:"description=Reports re-matched at once after a DB change (--rematch-concurrency),minimum=1,maximum=16"`
	RematchSkip        MatcherRematchSkip `json:"rematchSkip"`
	Persistence        MatcherPersistence `json:"persistence"`
}

// MatcherRematchSkip is the matcher's skipping of the reports a DB update
// cannot change (docs/matcher.md).
type MatcherRematchSkip struct {
	Enabled       bool    `json:"enabled" jsonschema:"description=Skip re-matching the reports whose recorded lookups meet no row that changed since the previous DB (--rematch-skip); false: match every report on every update"`
	CheckFraction float64 `json:"checkFraction" jsonschema:"description=Fraction of the skippable reports matched in full anyway to check the skip; a mismatch counts in crowsnest_rematch_skip_mismatch_total (--rematch-skip-check),minimum=0,maximum=1"`
	CheckMax      int     `json:"checkMax" jsonschema:"description=Most skippable reports a pass matches in full for the check (the first aside); at 2-3 reports/s 50 take ~20 s; 0: no cap (--rematch-skip-check-max),minimum=0"`
}

// MatcherPersistence is the matcher's data volume: a claim, or an emptyDir
// of the same size.
type MatcherPersistence struct {
	Enabled      bool   `json:"enabled" jsonschema:"description=Keep the DBs on a PersistentVolumeClaim (an air-gap import survives restarts); false: an emptyDir"`
	Size         string `json:"size" jsonschema:"pattern=^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti)$"`
	StorageClass string `json:"storageClass"`
}

// ClusterScanner is the chart's ClusterScanner (crowsnest.dev/v1alpha1):
// namespaces chosen by labels instead of listed in global.scan.namespaces.
type ClusterScanner struct {
	Enabled           bool              `json:"enabled" jsonschema:"description=Render the ClusterScanner; needs operator.clusterWide=true"`
	NamespaceSelector NamespaceSelector `json:"namespaceSelector" jsonschema:"description=Label selector of the namespaces covered; empty: every namespace"`
	ExcludeNamespaces []string          `json:"excludeNamespaces" jsonschema:"description=Namespaces never covered; empty: kube-system kube-public kube-node-lease and the release namespace; a list replaces all of those,uniqueItems=true,maxItems=256,pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?$,maxLength=63"`
	Spec              map[string]any    `json:"spec" jsonschema:"description=Spec of the generated Scanners (kubectl explain scanner.spec); the CRD validates it"`
}

// NamespaceSelector is a metav1.LabelSelector.
type NamespaceSelector struct {
	MatchLabels      map[string]string  `json:"matchLabels,omitempty"`
	MatchExpressions []LabelRequirement `json:"matchExpressions,omitempty"`
}

// LabelRequirement is one matchExpressions entry of a label selector.
type LabelRequirement struct {
	Key      string   `json:"key" jsonschema:"minLength=1"`
	Operator string   `json:"operator" jsonschema:"enum=In,enum=NotIn,enum=Exists,enum=DoesNotExist"`
	Values   []string `json:"values,omitempty"`
}

// Scan says where scan Jobs run and as whom.
type Scan struct {
	Namespaces      []string            `json:"namespaces" jsonschema:"description=Namespaces Crowsnest scans: the operator watches only these (a Role in each) unless operator.clusterWide; their scan Pods may upload and defaultScanner creates Scanners there; empty only with operator.clusterWide,uniqueItems=true,pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?$,maxLength=63"`
	ServiceAccount  string              `json:"serviceAccount" jsonschema:"description=ServiceAccount scan Pods run as; the chart creates it without permissions in every scan namespace; never default,pattern=^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	AdmissionPolicy ScanAdmissionPolicy `json:"admissionPolicy"`
}

// ScanAdmissionPolicy keeps the scan identity to the scan: a
// ValidatingAdmissionPolicy on who may create scan Jobs, scan Pods and
// tokens of the scan ServiceAccount.
type ScanAdmissionPolicy struct {
	Enabled            bool     `json:"enabled" jsonschema:"description=Install the ValidatingAdmissionPolicy <release>-scan-identity (admissionregistration.k8s.io/v1; Kubernetes 1.30+): only the operator creates or changes scan Jobs; only the Job controller creates Pods that run as the scan ServiceAccount and nobody changes or execs into them; only kubelets request its tokens; and <release>-scan-operator: the operator's Jobs are scan Jobs (scan ServiceAccount and images and the restricted security context) and it writes only the scan ServiceAccount"`
	JobControllerUsers []string `json:"jobControllerUsers" jsonschema:"description=Users the Job controller acts as when it creates a Job's Pods: system:serviceaccount:kube-system:job-controller with --use-service-account-credentials (kubeadm and most managed clusters); system:kube-controller-manager without,minItems=1,uniqueItems=true"`
	KubeletGroups      []string `json:"kubeletGroups" jsonschema:"description=Groups that may request tokens of the scan ServiceAccount (the kubelet mounting the scan Pod's projected token),minItems=1,uniqueItems=true"`
	ExtraScanImages    []string `json:"extraScanImages" jsonschema:"description=Images the operator's scan Jobs may run besides operator.uploaderImage and operator.grypeImage (every Scanner's spec.grypeImage); an entry ending in * allows every image starting with the rest (registry.example/grype:*),uniqueItems=true,pattern=^[^*\\s]+[*]?$"`
}

// ExternalNATS points at a NATS server when the bundled one is disabled, and
// says how each component authenticates to NATS.
type ExternalNATS struct {
	URL            string          `json:"url" jsonschema:"description=URL of an external NATS with JetStream (nats.enabled=false),pattern=^$|^(nats|tls)://"`
	ExistingSecret SecretKey       `json:"existingSecret" jsonschema:"description=Secret whose key holds the NATS URL with credentials; wins over url"`
	Users          NATSUsers       `json:"users" jsonschema:"description=Passwords of the bundled NATS's users"`
	Credentials    NATSCredentials `json:"credentials" jsonschema:"description=Credentials of each component on an external NATS (nats.enabled=false)"`
}

// NATSUsers are the passwords of the bundled NATS's users (api/events/v1
// Users): generated, or from an existing Secret.
type NATSUsers struct {
	ExistingSecret string `json:"existingSecret" jsonschema:"description=Secret with one password per user (keys operator results-api matcher notifier reader; letters and digits); empty generates <release>-nats-users and keeps it on upgrade,pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
}

// NATSCredentials are the operator's and results-api's credentials on an
// external NATS.
type NATSCredentials struct {
	Operator   NATSClient `json:"operator"`
	ResultsAPI NATSClient `json:"resultsApi"`
	Matcher    NATSClient `json:"matcher"`
	Notifier   NATSClient `json:"notifier"`
}

// Notifier is the notifier (off by default).
type Notifier struct {
	Enabled bool `json:"enabled" jsonschema:"description=Run the notifier (needs config.receivers and routes)"`
	Component
	DashboardURL string         `json:"dashboardURL" jsonschema:"description=Base URL of the dashboard for links in notifications,pattern=^$|^https?://"`
	Config       NotifierConfig `json:"config" jsonschema:"description=Receivers and routes (docs/notifications.md); validated by the notifier at start"`
	SecretName   string         `json:"secretName" jsonschema:"description=Existing Secret whose keys are mounted as files under /etc/crowsnest/secrets (receiver secrets),pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	EgressPorts  []int          `json:"egressPorts" jsonschema:"description=Ports the notifier may reach on any address (its receivers),uniqueItems=true"`
}

// NotifierConfig is the notifier's configuration file; the notifier
// checks it (unknown fields are errors there).
type NotifierConfig struct {
	Receivers []map[string]any `json:"receivers"`
	Routes    []map[string]any `json:"routes"`
}

// NATSClient is how one component authenticates to an external NATS: a
// .creds file from a Secret, or a user with a password from a Secret, or
// nothing (credentials in the URL, or an open NATS).
type NATSClient struct {
	User           string    `json:"user" jsonschema:"description=NATS user name; its password comes from passwordSecret,pattern=^$|^[^\\s]+$"`
	PasswordSecret SecretKey `json:"passwordSecret" jsonschema:"description=Secret whose key holds the user's password (--nats-password-file)"`
	CredsSecret    SecretKey `json:"credsSecret" jsonschema:"description=Secret whose key holds a NATS .creds file (JWT and NKey seed; --nats-creds); excludes user and passwordSecret"`
}

// GlobalAPI holds the results-api settings that the operator subchart must
// see as well (a subchart sees only its own section and global).
type GlobalAPI struct {
	TLS APITLS `json:"tls"`
}

// APITLS is HTTPS on results-api itself: a kubernetes.io/tls Secret you
// name, or one a cert-manager Certificate writes.
type APITLS struct {
	Enabled          bool        `json:"enabled" jsonschema:"description=Serve results-api over HTTPS (--tls-cert-file and --tls-key-file); the operator and scan Jobs then use https"`
	SecretName       string      `json:"secretName" jsonschema:"description=kubernetes.io/tls Secret (tls.crt tls.key ca.crt) for <release>-results-api.<namespace>.svc; with certManager.issuerRef the Certificate writes it (empty: <release>-results-api-tls),pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	CertManager      CertManager `json:"certManager"`
	UploaderTrustsCA bool        `json:"uploaderTrustsCA" jsonschema:"description=Confirms that operator.uploaderImage trusts the certificate's CA (the uploader has no CA option); required with enabled in tokenreview mode"`
}

// CertManager is how the chart asks cert-manager for results-api's
// certificate.
type CertManager struct {
	IssuerRef IssuerRef `json:"issuerRef" jsonschema:"description=Issuer of results-api's Certificate; empty name: no Certificate (name the Secret in secretName)"`
}

// IssuerRef names a cert-manager Issuer or ClusterIssuer.
type IssuerRef struct {
	Name  string `json:"name" jsonschema:"pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	Kind  string `json:"kind" jsonschema:"enum=Issuer,enum=ClusterIssuer"`
	Group string `json:"group" jsonschema:"minLength=1"`
}

// ExternalDB points at a Postgres database when the bundled one is disabled.
type ExternalDB struct {
	ExistingSecret SecretKey   `json:"existingSecret" jsonschema:"description=Secret whose key holds the Postgres URL (required when postgres.enabled=false)"`
	TLS            DatabaseTLS `json:"tls"`
}

// DatabaseTLS is how results-api checks the Postgres server it connects to.
type DatabaseTLS struct {
	Mode     string    `json:"mode" jsonschema:"description=sslmode results-api connects with (PGSSLMODE; an sslmode in the URL wins: leave it out); verify-full checks the server's certificate against caSecret (or the system roots) and its name against the URL's host; empty: what the URL says. Needs postgres.enabled=false: the bundled Postgres serves no TLS,enum=,enum=require,enum=verify-ca,enum=verify-full"`
	CASecret SecretKey `json:"caSecret" jsonschema:"description=Secret whose key holds the PEM CA certificate(s) that signed the server's certificate: mounted into results-api as PGSSLROOTCERT (e.g. CloudNativePG's <cluster>-ca key ca.crt); empty name: the system roots"`
}

// SecretKey names a key of an existing Secret in the release namespace.
type SecretKey struct {
	Name string `json:"name" jsonschema:"pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	Key  string `json:"key" jsonschema:"minLength=1"`
}

// NetworkPolicy switches the chart's NetworkPolicies on and says where the
// kube-apiserver and the registries are.
type NetworkPolicy struct {
	Enabled         bool     `json:"enabled" jsonschema:"description=NetworkPolicies that allow only Crowsnest's own flows (on by default)"`
	APIServerCIDRs  []string `json:"apiServerCIDRs" jsonschema:"description=CIDRs of the kube-apiserver for the operator's and results-api's egress (its endpoint addresses); empty allows any destination on apiServerPorts"`
	APIServerPorts  []int    `json:"apiServerPorts" jsonschema:"minItems=1"`
	ScanEgressPorts []int    `json:"scanEgressPorts" jsonschema:"description=Ports scan Pods may reach on any address: image registries and Grype's vulnerability database,minItems=1"`
}

// Image is a pinned container image: a tag other than latest, or a digest.
type Image struct {
	Repository string `json:"repository" jsonschema:"minLength=1"`
	Tag        string `json:"tag" jsonschema:"description=Image tag; never latest (the chart refuses it)"`
	Digest     string `json:"digest" jsonschema:"description=sha256 digest; pins exactly,pattern=^$|^sha256:[a-f0-9]{64}$"`
	PullPolicy string `json:"pullPolicy,omitempty" jsonschema:"enum=IfNotPresent,enum=Always,enum=Never"`
}

// Component is the shape every workload section shares.
type Component struct {
	Image              Image             `json:"image"`
	Replicas           int               `json:"replicas" jsonschema:"minimum=0"`
	Resources          map[string]any    `json:"resources" jsonschema:"description=Container resources (requests/limits)"`
	PodSecurityContext map[string]any    `json:"podSecurityContext" jsonschema:"description=Pod securityContext; keep it Pod Security restricted"`
	SecurityContext    map[string]any    `json:"securityContext" jsonschema:"description=Container securityContext; runAsNonRoot and seccomp are enforced"`
	ExtraArgs          []string          `json:"extraArgs"`
	PodAnnotations     map[string]string `json:"podAnnotations"`
	NodeSelector       map[string]string `json:"nodeSelector"`
	Tolerations        []map[string]any  `json:"tolerations"`
	Affinity           map[string]any    `json:"affinity"`
	// The usual knobs of production charts.
	TopologySpreadConstraints []map[string]any  `json:"topologySpreadConstraints" jsonschema:"description=Pod topologySpreadConstraints (results-api spreads over nodes by default when replicas > 1; a list replaces that)"`
	PriorityClassName         string            `json:"priorityClassName" jsonschema:"pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	PodLabels                 map[string]string `json:"podLabels" jsonschema:"description=Extra labels on the Pods (the chart's own labels win)"`
	ExtraEnv                  []map[string]any  `json:"extraEnv" jsonschema:"description=Extra environment variables of the main container (e.g. HTTPS_PROXY); the chart's own win"`
	ExtraVolumes              []map[string]any  `json:"extraVolumes" jsonschema:"description=Extra Pod volumes"`
	ExtraVolumeMounts         []map[string]any  `json:"extraVolumeMounts" jsonschema:"description=Extra volume mounts of the main container"`
}

// Operator is the operator subchart.
type Operator struct {
	Component
	ClusterWide   bool            `json:"clusterWide" jsonschema:"description=Watch and create scan Jobs in every namespace with a ClusterRole; false (default): only in global.scan.namespaces with a Role in each (--watch-namespaces)"`
	Metrics       OperatorMetrics `json:"metrics"`
	LeaderElect   bool            `json:"leaderElect"`
	UploaderImage Image           `json:"uploaderImage" jsonschema:"description=Image of the scan Jobs' uploader container"`
	GrypeImage    Image           `json:"grypeImage" jsonschema:"description=Grype image of the scan Jobs (a Scanner's spec.grypeImage overrides it)"`
	Scans         OperatorScans   `json:"scans" jsonschema:"description=Cluster-wide scheduling of scan Jobs"`
	ScanPod       OperatorScanPod `json:"scanPod" jsonschema:"description=Where scan Pods are scheduled by default (--scan-pod-*); a Scanner's spec.scanPod replaces each field it sets"`
	// PodDisruptionBudget applies with replicas > 1 (leader election keeps one active).
	PodDisruptionBudget PodDisruptionBudget `json:"podDisruptionBudget"`
}

// PodDisruptionBudget is a component's PodDisruptionBudget, rendered only
// when the component runs more than one replica (with one, a budget would
// block every node drain).
type PodDisruptionBudget struct {
	Enabled        bool `json:"enabled" jsonschema:"description=Render a PodDisruptionBudget when replicas > 1"`
	MaxUnavailable int  `json:"maxUnavailable" jsonschema:"description=Pods a voluntary disruption (node drain) may take down at once,minimum=1"`
}

// OperatorScans is the cluster-wide scheduling of scan Jobs (operator
// flags of the same names).
type OperatorScans struct {
	MaxConcurrent    int     `json:"maxConcurrent" jsonschema:"description=Scan Jobs running at once in the whole cluster shared fairly between Scanners (--max-concurrent-scans; 0: no cluster-wide cap),minimum=0"`
	RescansPerMinute int     `json:"rescansPerMinute" jsonschema:"description=Rescans started per minute in the whole cluster (--rescans-per-minute; 0: no limit),minimum=0"`
	RescanJitter     float64 `json:"rescanJitter" jsonschema:"description=Each digest's rescan interval moves by up to this fraction of it (--rescan-jitter; 0 to 0.5),minimum=0,maximum=0.5"`
	StuckGrace       string  `json:"stuckGrace" jsonschema:"description=How long a scan Pod may wait on an image pull or a refused Pod before the scan is ended as failed (--stuck-grace; 0s: wait for the scan timeout),pattern=^([0-9]+(ms|s|m|h))+$"`
}

// OperatorScanPod is the operator-wide scheduling of scan Pods (the
// --scan-pod-* flags).
type OperatorScanPod struct {
	NodeSelector      map[string]string `json:"nodeSelector" jsonschema:"description=Node selector of scan Pods (--scan-pod-node-selector)"`
	Tolerations       []map[string]any  `json:"tolerations" jsonschema:"description=core/v1 Tolerations of scan Pods (--scan-pod-tolerations)"`
	Affinity          map[string]any    `json:"affinity" jsonschema:"description=core/v1 Affinity of scan Pods (--scan-pod-affinity)"`
	PriorityClassName string            `json:"priorityClassName" jsonschema:"description=PriorityClass of scan Pods (--scan-pod-priority-class; empty: none),pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
}

// OperatorMetrics is the operator's /metrics endpoint: HTTPS, and only for
// bearer tokens allowed to get the non-resource URL /metrics.
type OperatorMetrics struct {
	CertSecret string `json:"certSecret" jsonschema:"description=kubernetes.io/tls Secret (tls.crt tls.key ca.crt) for /metrics instead of a self-signed certificate; the ServiceMonitor then verifies it with ca.crt,pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
}

// ResultsAPI is the results-api subchart.
type ResultsAPI struct {
	Component
	Service     Service  `json:"service"`
	MaxBOMBytes int64    `json:"maxBomBytes" jsonschema:"minimum=1024"`
	Auth        Auth     `json:"auth"`
	ReadAuth    ReadAuth `json:"readAuth"`
	// ReportRetention is --report-retention.
	ReportRetention string `json:"reportRetention" jsonschema:"description=Delete reports of images no namespace has run for longer than this (0s keeps them),pattern=^([0-9]+(ms|s|m|h))+$"`
	// VulnMetrics are --vuln-metrics-interval and --vuln-metrics-max-namespaces.
	VulnMetrics VulnMetrics `json:"vulnMetrics"`
	// SLA is --sla: remediation deadlines per severity and for KEV-listed
	// findings (results-api parses it at start and refuses a bad one).
	SLA        string     `json:"sla" jsonschema:"description=Remediation SLA: severity=window pairs (critical/high/medium/low/negligible/unknown) and kev=window; windows as whole days (7d) or Go durations; none for no deadlines,pattern=^(none|(critical|high|medium|low|negligible|unknown|kev)=([0-9]+d|([0-9]+(ms|s|m|h))+)(\\x2c(critical|high|medium|low|negligible|unknown|kev)=([0-9]+d|([0-9]+(ms|s|m|h))+))*)$"`
	WriteToken WriteToken `json:"writeToken"`
	Ingress    Ingress    `json:"ingress"`
	// PodDisruptionBudget applies with replicas > 1 (the default is 2).
	PodDisruptionBudget PodDisruptionBudget `json:"podDisruptionBudget"`
}

// VulnMetrics tunes results-api's vulnerability metrics.
type VulnMetrics struct {
	Interval      string `json:"interval" jsonschema:"description=Recompute the vulnerability metrics from the database this often on each replica (0s turns them off),pattern=^([0-9]+(ms|s|m|h))+$"`
	MaxNamespaces int    `json:"maxNamespaces" jsonschema:"description=Namespaces crowsnest_namespace_vulnerabilities exports at most (those with the most critical+high findings); crowsnest_namespace_vulnerabilities_truncated counts the others,minimum=1"`
}

// Auth is how results-api checks writers.
type Auth struct {
	Mode                        string   `json:"mode" jsonschema:"description=static: only the admin token writes; tokenreview: also scan Pods and those bound to <release>-admin; empty: tokenreview when there are scan namespaces,enum=,enum=static,enum=tokenreview"`
	ExtraAllowedServiceAccounts []string `json:"extraAllowedServiceAccounts" jsonschema:"description=More namespaces whose scan Pods may upload (namespace/name or namespace/*); CI binds <release>-admin instead"`
	VerifyTokenSignatures       bool     `json:"verifyTokenSignatures" jsonschema:"description=Verify service-account tokens against the API server's issuer keys before TokenReview (--verify-token-signatures); false only where results-api cannot read them"`
}

// ReadAuth is who may read (results-api --read-auth and --auth-proxy-*).
type ReadAuth struct {
	Mode       string    `json:"mode" jsonschema:"description=kubernetes: bearer tokens (TokenReview) or proxy headers then SubjectAccessReview list on reports.crowsnest.dev per namespace; open: anyone reads everything (and /metrics is open too),enum=kubernetes,enum=open"`
	Namespaces string    `json:"namespaces" jsonschema:"description=rbac: review only the namespaces where a RoleBinding names the reader (watches RoleBindings); all: every namespace of the inventory (clusters where an authorizer other than RBAC grants reads),enum=rbac,enum=all"`
	Proxy      AuthProxy `json:"proxy" jsonschema:"description=An authenticating proxy in front of results-api"`
}

// AuthProxy is an authenticating proxy's identity headers.
type AuthProxy struct {
	UserHeader   string   `json:"userHeader" jsonschema:"description=Header with the user (e.g. X-Forwarded-User); empty: no proxy,pattern=^$|^[A-Za-z0-9-]+$"`
	GroupsHeader string   `json:"groupsHeader" jsonschema:"pattern=^$|^[A-Za-z0-9-]+$"`
	TrustedCIDRs []string `json:"trustedCIDRs" jsonschema:"description=Addresses the proxy connects from; headers from any other peer are ignored"`
}

// Service of results-api.
type Service struct {
	Type string `json:"type" jsonschema:"enum=ClusterIP,enum=NodePort,enum=LoadBalancer"`
}

// WriteToken is the static admin token (results-api --admin-token-file):
// writers other than scan Jobs, in every auth mode.
type WriteToken struct {
	ExistingSecret string `json:"existingSecret" jsonschema:"description=Secret holding the static admin token; empty generates <release>-results-api-write-token (kept on upgrade by lookup; not with helm template or GitOps),pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	Key            string `json:"key" jsonschema:"description=Key of existingSecret holding the token,minLength=1"`
}

// Ingress for the dashboard.
type Ingress struct {
	Enabled        bool              `json:"enabled"`
	ClassName      string            `json:"className"`
	Annotations    map[string]string `json:"annotations"`
	Host           string            `json:"host" jsonschema:"minLength=1"`
	TLSSecretName  string            `json:"tlsSecretName" jsonschema:"description=TLS Secret for host; required when enabled unless allowPlainHTTP,pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	AllowPlainHTTP bool              `json:"allowPlainHTTP" jsonschema:"description=Render the Ingress without tlsSecretName (plain HTTP: tokens cross it in clear text)"`
}

// Persistence is a StatefulSet's volume claim.
type Persistence struct {
	Size         string `json:"size" jsonschema:"pattern=^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti)$"`
	StorageClass string `json:"storageClass"`
}

// NATS is the bundled NATS subchart.
type NATS struct {
	Enabled bool `json:"enabled"`
	Component
	JetStream   JetStream   `json:"jetstream"`
	Persistence Persistence `json:"persistence"`
}

// JetStream limits of the bundled NATS, in nats-server size syntax.
type JetStream struct {
	MaxMemoryStore string `json:"maxMemoryStore" jsonschema:"pattern=^[0-9]+[KMGT]?i?B?$"`
	MaxFileStore   string `json:"maxFileStore" jsonschema:"pattern=^[0-9]+[KMGT]?i?B?$"`
}

// Postgres is the bundled Postgres subchart.
type Postgres struct {
	Enabled bool `json:"enabled"`
	Component
	Database          string      `json:"database" jsonschema:"pattern=^[a-z_][a-z0-9_]*$"`
	Username          string      `json:"username" jsonschema:"pattern=^[a-z_][a-z0-9_]*$"`
	ExistingSecret    string      `json:"existingSecret" jsonschema:"description=Secret holding the password (key existingSecretKey) instead of a generated one; needs global.database.existingSecret,pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
	ExistingSecretKey string      `json:"existingSecretKey" jsonschema:"description=Key of existingSecret holding the password,minLength=1"`
	Persistence       Persistence `json:"persistence"`
}

// Monitoring is the Prometheus Operator integration.
type Monitoring struct {
	Enabled                  bool              `json:"enabled"`
	Labels                   map[string]string `json:"labels"`
	PrometheusServiceAccount ServiceAccountRef `json:"prometheusServiceAccount" jsonschema:"description=Prometheus's ServiceAccount: the chart binds it to ClusterRole <release>-metrics-reader; empty: bind it yourself"`
	Interval                 string            `json:"interval" jsonschema:"pattern=^[0-9]+(ms|s|m|h)$"`
	RunbookBaseURL           string            `json:"runbookBaseURL" jsonschema:"description=Each alert's runbook_url is this plus #<alert name in lower case> (docs/runbooks.md),pattern=^https?://"`
	Rules                    Rules             `json:"rules"`
	Dashboards               Dashboards        `json:"dashboards"`
}

// ServiceAccountRef names a ServiceAccount in any namespace.
type ServiceAccountRef struct {
	Namespace string `json:"namespace" jsonschema:"pattern=^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?$,maxLength=63"`
	Name      string `json:"name" jsonschema:"pattern=^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$,maxLength=253"`
}

// Rules are the PrometheusRule thresholds.
type Rules struct {
	ScanFailureRatio float64 `json:"scanFailureRatio" jsonschema:"minimum=0,maximum=1"`
	StaleReportsFor  string  `json:"staleReportsFor" jsonschema:"pattern=^[0-9]+(m|h|d)$"`
	APIErrorRatio    float64 `json:"apiErrorRatio" jsonschema:"minimum=0,maximum=1"`
	VulnDBMaxAge     int     `json:"vulnDBMaxAgeSeconds" jsonschema:"description=Alert when the matcher's DB is older than this many seconds,minimum=3600"`
}

// Dashboards are the Grafana dashboard ConfigMaps.
type Dashboards struct {
	Enabled     bool              `json:"enabled" jsonschema:"description=Render the Grafana dashboard ConfigMaps (with monitoring.enabled; no Prometheus Operator API needed)"`
	Labels      map[string]string `json:"labels" jsonschema:"description=Labels the Grafana dashboard sidecar selects the ConfigMaps by"`
	Annotations map[string]string `json:"annotations" jsonschema:"description=Annotations on the ConfigMaps (e.g. grafana_folder)"`
}

// DefaultScanner is a Scanner the chart creates in each listed namespace.
type DefaultScanner struct {
	Enabled bool           `json:"enabled"`
	Name    string         `json:"name" jsonschema:"pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?$,maxLength=63"`
	Spec    map[string]any `json:"spec" jsonschema:"description=Scanner spec; the CRD validates it"`
}
