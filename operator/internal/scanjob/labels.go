package scanjob

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/crowsnest-dev/crowsnest/api/scan"
)

// Labels and annotations on scan Jobs (and their Pods).
const (
	LabelManagedBy  = scan.LabelManagedBy
	ManagedBy       = scan.ManagedBy
	LabelName       = scan.LabelName
	AppName         = scan.AppName
	LabelScanner    = "crowsnest.dev/scanner"
	LabelDigestHash = scan.LabelDigestHash

	AnnotationDigest    = scan.AnnotationDigest
	AnnotationImage     = scan.AnnotationImage
	AnnotationAttempt   = "crowsnest.dev/attempt"
	AnnotationReason    = "crowsnest.dev/reason"
	AnnotationOutcome   = "crowsnest.dev/outcome"   // set once the outcome is recorded
	AnnotationPublished = "crowsnest.dev/published" // "needed" or "done": events delivered
	AnnotationFailure   = "crowsnest.dev/failure"   // "<reason>: <message>" of a failed Job
)

// DefaultGrypeImage is the pinned Grype release (DB schema v6), built by
// make image-grype (hack/tools/imagebuild) from the same Grype module as
// hack/tools/grype: the shell-less base of the Crowsnest images, /grype as
// the entrypoint, like anchore/grype.
const DefaultGrypeImage = "ghcr.io/crowsnest-dev/crowsnest-grype:v0.121.2"

// TokenAudience is the audience of the projected token the uploader presents.
const TokenAudience = scan.TokenAudience

// JobName derives the Job's name from the Scanner and the digest: at most 63
// characters, a valid DNS label, the same for the same inputs, so creating
// the Job twice is a no-op.
func JobName(scanner, digest string) string {
	sum := sha256.Sum256([]byte(scanner + "\x00" + digest))
	prefix := strings.Trim(strings.ReplaceAll(scanner, ".", "-"), "-")
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	return prefix + "-scan-" + hex.EncodeToString(sum[:8])
}

// DigestHash is the label value identifying a digest (scan.DigestHash).
func DigestHash(digest string) string { return scan.DigestHash(digest) }

// SelectorLabels select every Job of one Scanner.
func SelectorLabels(scanner string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelScanner: scanner}
}
