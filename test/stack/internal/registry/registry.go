package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Image is one demo image.
type Image struct {
	Name   string // short name, e.g. "alpine"
	Tag    string
	Repo   string // host/demo/<name>
	Digest string // sha256:<hex>
	Pushed bool   // false: the image's digest is known but the registry does not have it
}

// Ref is the tag reference a Pod spec uses.
func (i Image) Ref() string { return i.Repo + ":" + i.Tag }

// ImageID is what a kubelet reports in a container status: repo@digest.
func (i Image) ImageID() string { return i.Repo + "@" + i.Digest }

// Registry is a running registry with the demo images.
type Registry struct {
	Host   string // 127.0.0.1:port
	Images []Image

	mu    sync.Mutex
	srv   *http.Server
	holds holds
}

// Start serves a registry on addr (e.g. "127.0.0.1:0") and pushes images.
// Requests it fails (a status of 500 or more) are logged to lg, if not nil:
// a scan that fails on a registry error then says which request did.
func Start(ctx context.Context, addr string, images []Built, lg *slog.Logger) (*Registry, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("registry listen %s: %w", addr, err)
	}
	r := &Registry{Host: ln.Addr().String()}
	r.srv = &http.Server{
		Handler:           logFailures(lg, r.holding(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = r.srv.Serve(ln) }()
	for _, b := range images {
		img, err := r.push(ctx, b)
		if err != nil {
			_ = r.Close()
			return nil, err
		}
		r.Images = append(r.Images, img)
	}
	return r, nil
}

func (r *Registry) push(ctx context.Context, b Built) (Image, error) {
	d, err := b.Image.Digest()
	if err != nil {
		return Image{}, fmt.Errorf("digest of %s: %w", b.Name, err)
	}
	img := Image{Name: b.Name, Tag: b.Tag, Repo: r.Host + "/demo/" + b.Name, Digest: d.String()}
	if b.Unpushed {
		return img, nil
	}
	ref, err := name.ParseReference(img.Ref(), name.Insecure)
	if err != nil {
		return Image{}, err
	}
	if err := remote.Write(ref, b.Image, remote.WithContext(ctx)); err != nil {
		return Image{}, fmt.Errorf("push %s: %w", ref, err)
	}
	img.Pushed = true
	return img, nil
}

// Push builds nothing: it pushes an already built image and records it.
func (r *Registry) Push(ctx context.Context, b Built) (Image, error) {
	img, err := r.push(ctx, b)
	if err != nil {
		return Image{}, err
	}
	r.mu.Lock()
	r.Images = append(r.Images, img)
	r.mu.Unlock()
	return img, nil
}

// Lookup finds a demo image by short name.
func (r *Registry) Lookup(short string) (Image, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range r.Images {
		if i.Name == short {
			return i, true
		}
	}
	return Image{}, false
}

// ResolveID maps a Pod's image reference (host/demo/name:tag or
// host/demo/name@digest) to the imageID a kubelet would report.
func (r *Registry) ResolveID(ref string) (string, bool) {
	if repo, digest, ok := strings.Cut(ref, "@"); ok {
		return repo + "@" + digest, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range r.Images {
		if i.Ref() == ref {
			return i.ImageID(), true
		}
	}
	return "", false
}

// Digest of a pushed manifest, asked of the registry itself.
func (r *Registry) Digest(ctx context.Context, ref string) (v1.Hash, error) {
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return v1.Hash{}, err
	}
	desc, err := remote.Head(parsed, remote.WithContext(ctx))
	if err != nil {
		return v1.Hash{}, err
	}
	return desc.Digest, nil
}

// Close stops the registry.
func (r *Registry) Close() error {
	r.releaseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// statusWriter records the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// logFailures logs each request next answers with a server error.
func logFailures(lg *slog.Logger, next http.Handler) http.Handler {
	if lg == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(sw, req)
		if sw.status >= http.StatusInternalServerError {
			lg.Warn("registry request failed", "method", req.Method, "path", req.URL.Path, "status", sw.status,
				"remote", req.RemoteAddr, "took", time.Since(start).Round(time.Millisecond))
		}
	})
}
