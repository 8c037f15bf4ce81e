package discovery

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultRegistry and DefaultNamespace are what a short Docker Hub reference
// such as "nginx" expands to.
const (
	DefaultRegistry  = "docker.io"
	DefaultNamespace = "library"
)

// ErrNotPullable marks an imageID that is a bare content digest (an image
// loaded into the node, e.g. with `kind load`): there is no repository to
// pull it from, so it cannot be scanned.
var ErrNotPullable = errors.New("image has no repository to pull from")

// ErrInvalid marks an imageID that is not a sha256 image reference at all.
var ErrInvalid = errors.New("invalid image id")

// Image is a normalized, pullable image reference.
type Image struct {
	Repository string // e.g. docker.io/library/nginx
	Digest     string // sha256:<64 lowercase hex>
}

// Ref returns repository@digest.
func (i Image) Ref() string { return i.Repository + "@" + i.Digest }

// Normalize parses a container status imageID into a pullable reference.
// Accepted forms: "docker-pullable://nginx@sha256:…", "docker://…",
// "nginx:1.27@sha256:…", "ghcr.io/o/r@sha256:…", "localhost:5000/r@sha256:…".
// A bare "sha256:…" returns its digest with ErrNotPullable.
func Normalize(imageID string) (Image, error) {
	s := strings.TrimSpace(imageID)
	for _, p := range []string{"docker-pullable://", "docker://", "containerd://"} {
		s = strings.TrimPrefix(s, p)
	}
	repo, digest, found := strings.Cut(s, "@")
	if !found {
		// No repository: either a bare digest or garbage.
		if err := ValidDigest(s); err != nil {
			return Image{}, fmt.Errorf("%w %q: %w", ErrInvalid, imageID, err)
		}
		return Image{Digest: s}, ErrNotPullable
	}
	if err := ValidDigest(digest); err != nil {
		return Image{}, fmt.Errorf("%w %q: %w", ErrInvalid, imageID, err)
	}
	repo, err := normalizeRepository(repo)
	if err != nil {
		return Image{}, fmt.Errorf("%w %q: %w", ErrInvalid, imageID, err)
	}
	return Image{Repository: repo, Digest: digest}, nil
}

// ValidDigest checks the sha256:<64 lowercase hex> form.
func ValidDigest(d string) error {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok {
		return errors.New("digest must start with \"sha256:\"")
	}
	if len(hex) != 64 {
		return fmt.Errorf("digest has %d hex characters, want 64", len(hex))
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return errors.New("digest must be lowercase hex")
		}
	}
	return nil
}

// normalizeRepository drops a tag and applies Docker Hub's defaults.
func normalizeRepository(repo string) (string, error) {
	if repo == "" {
		return "", errors.New("empty repository")
	}
	// A tag is a ":" after the last "/"; a ":" before it is a registry port.
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	first, rest, hasSlash := strings.Cut(repo, "/")
	isRegistry := hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost")
	switch {
	case !hasSlash:
		repo = DefaultRegistry + "/" + DefaultNamespace + "/" + repo
	case !isRegistry:
		repo = DefaultRegistry + "/" + repo
	case first == "index.docker.io" || first == "registry-1.docker.io":
		repo = DefaultRegistry + "/" + rest
		if !strings.Contains(rest, "/") {
			repo = DefaultRegistry + "/" + DefaultNamespace + "/" + rest
		}
	case first == DefaultRegistry && !strings.Contains(rest, "/"):
		repo = DefaultRegistry + "/" + DefaultNamespace + "/" + rest
	}
	for _, c := range repo {
		if c <= ' ' || c == '@' || c == '"' || c == '\\' {
			return "", fmt.Errorf("repository %q has invalid characters", repo)
		}
	}
	if strings.ToLower(repo[strings.Index(repo, "/")+1:]) != repo[strings.Index(repo, "/")+1:] {
		return "", fmt.Errorf("repository path %q must be lowercase", repo)
	}
	return repo, nil
}
