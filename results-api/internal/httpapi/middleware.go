package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

const lookupBodyLimit = 2 << 20 // 10,000 digests of 71 bytes plus JSON

// requestIDHeader echoes the request id and puts the server's logger in
// the request context, where writeError finds it.
func (s *Server) requestIDHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", middleware.GetReqID(r.Context()))
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), loggerKey{}, s.cfg.Logger)))
	})
}

type loggerKey struct{}

// loggerFrom returns the server's logger for r (slog's default outside
// the middleware chain, as in unit tests of single handlers).
func loggerFrom(r *http.Request) *slog.Logger {
	if l, ok := r.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				s.cfg.Logger.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", v,
					"request_id", middleware.GetReqID(r.Context()))
				writeError(w, r, newError(http.StatusInternalServerError, "internal", "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// observe records the request duration by route pattern (never the raw
// path, to keep label cardinality low) and logs one line per request.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "other"
		}
		code := ww.Status()
		if code == 0 {
			code = http.StatusOK
		}
		d := time.Since(start)
		s.cfg.Metrics.HTTPDuration.WithLabelValues(route, r.Method, strconv.Itoa(code)).Observe(d.Seconds())
		lvl := slog.LevelDebug
		if code >= 500 {
			lvl = slog.LevelWarn
		}
		s.cfg.Logger.Log(r.Context(), lvl, "http request", "method", r.Method, "route", route, "code", code,
			"duration_ms", d.Milliseconds(), "request_id", middleware.GetReqID(r.Context()))
	})
}

// limitBody caps the request body; reads beyond it fail with 413.
func (s *Server) limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}
