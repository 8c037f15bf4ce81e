package scan

import "strings"

// Exit codes of the uploader: the scan Job's outcome. The operator maps them
// to a Scanner failure reason (docs/uploader.md lists them).
const (
	ExitOK            = 0 // report stored (201 created or 200 replaced)
	ExitFailure       = 1 // unexpected internal error
	ExitUsage         = 2 // bad flags or environment
	ExitInvalidReport = 3 // report missing, unreadable, too large or not CycloneDX JSON
	ExitRejected      = 4 // results-api answered 4xx (auth, bad digest, bad BOM, too large)
	ExitUnreachable   = 5 // results-api unreachable or 5xx until attempts or deadline ran out
	ExitTokenInvalid  = 6 // token file missing, unreadable or empty
)

// Paths inside the scan Pod.
const (
	// ScanDir is the emptyDir shared by the Grype and uploader containers.
	ScanDir = "/scan"
	// BOMFile is where Grype writes its CycloneDX report.
	BOMFile = ScanDir + "/bom.json"
	// GrypeJSONFile is Grype's own JSON report of the same scan: the
	// uploader reads the DB build and schema Grype matched against from
	// its descriptor (descriptor.db.status) and sends them with the BOM.
	GrypeJSONFile = ScanDir + "/grype.json"
	// TokenDir holds the projected service-account token volume.
	TokenDir = "/var/run/secrets/crowsnest/token"
	// TokenFile is the projected token the uploader presents.
	TokenFile = TokenDir + "/token"
	// DBCacheDir is Grype's vulnerability DB cache.
	DBCacheDir = "/var/cache/grype/db"
	// RegistryDir holds the Docker config Grype pulls the image with.
	RegistryDir = "/var/run/secrets/crowsnest/registry"
)

// The projected token the uploader presents to results-api.
// Headers of the uploader's PUT: the Grype DB the report was matched
// against, as Grype's JSON report names it. results-api validates and
// stores them (a report without them records an unknown DB).
const (
	// HeaderDBBuilt is the DB's build time, RFC 3339.
	HeaderDBBuilt = "X-Crowsnest-DB-Built"
	// HeaderDBSchema is the DB's schema version, e.g. v6.1.10.
	HeaderDBSchema = "X-Crowsnest-DB-Schema"
)

const (
	// TokenAudience is the token's audience; results-api accepts no other.
	TokenAudience = "crowsnest-results-api"
	// TokenExpirationSeconds is the token's lifetime (the kubelet renews it
	// at 80%, and the uploader reads the file when it uploads).
	TokenExpirationSeconds = 600
)

// Labels and annotations that identify a scan Job and its Pod.
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	ManagedBy       = "crowsnest-operator"
	LabelName       = "app.kubernetes.io/name"
	AppName         = "crowsnest-scan"
	LabelDigestHash = "crowsnest.dev/digest-hash"

	AnnotationDigest = "crowsnest.dev/digest"
	AnnotationImage  = "crowsnest.dev/image"
)

// DigestHash is the value of LabelDigestHash on the scan Job and Pod of
// digest: its first 32 hex characters, without the "sha256:" prefix (a label
// value holds at most 63). Tools select a digest's scan Pods by it.
func DigestHash(digest string) string {
	h := strings.TrimPrefix(digest, "sha256:")
	if len(h) > 32 {
		h = h[:32]
	}
	return h
}
