// Package ui serves the web dashboard: the build of web/ embedded into the
// binary (dist/, filled by the web build), or a directory on disk
// (--ui-dir). Unknown paths fall back to index.html so that client-side
// routes work; hashed assets are cached for a year, index.html never.
// Every answer carries a strict Content-Security-Policy (CSP).
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
)

// CSP is the UI's Content-Security-Policy. The Vite build has no inline
// script or style (one module script and one stylesheet under /assets, and
// components set no style attributes), so nothing needs 'unsafe-inline';
// img-src allows data: for the favicon, an inline SVG data URL in
// index.html. connect-src 'self' covers the REST calls and the same-origin
// WebSocket (CSP 3 matches ws:/wss: of the page's host).
const CSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

//go:embed all:dist
var dist embed.FS

// Embedded returns the embedded build.
func Embedded() fs.FS {
	sub, _ := fs.Sub(dist, "dist")
	return sub
}

// Dir returns the build in directory dir.
func Dir(dir string) fs.FS { return os.DirFS(dir) }

// Handler serves files from fsys with an SPA fallback to index.html. API,
// health and metrics paths are never answered with the UI.
func Handler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", CSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if p == "api" || strings.HasPrefix(p, "api/") {
			http.NotFound(w, r)
			return
		}
		if p != "" {
			if st, err := fs.Stat(fsys, p); err == nil && !st.IsDir() {
				if strings.HasPrefix(p, "assets/") {
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					w.Header().Set("Cache-Control", "no-cache")
				}
				files.ServeHTTP(w, r)
				return
			}
		}
		index, err := fs.ReadFile(fsys, "index.html")
		if err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("The web UI is not built into this binary. Build web/ (make build-web) or pass --ui-dir.\n"))
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
}
