package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// maxRequestIDLen bounds a request ID taken from the client: enough for a
// UUID, a W3C trace id or chi's own "host/random-000001".
const maxRequestIDLen = 64

// requestID is chi's middleware.RequestID with the client's X-Request-Id
// kept only when it is short (at most maxRequestIDLen) and made of a safe
// charset (letters, digits and . _ ~ : / + = -); any other value is
// dropped and chi generates one. The ID goes into every log line, the
// X-Request-Id response header and error bodies: taken as sent, a client
// could fill logs with kilobytes per request, forge log fields, or carry
// bidirectional overrides and C1 controls into whatever terminal or log
// viewer shows them.
func requestID(next http.Handler) http.Handler {
	generate := middleware.RequestID(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vs := r.Header.Values(middleware.RequestIDHeader); len(vs) > 0 && (len(vs) > 1 || !safeRequestID(vs[0])) {
			r.Header.Del(middleware.RequestIDHeader)
		}
		generate.ServeHTTP(w, r)
	})
}

// safeRequestID reports whether a client's request ID may be used as sent.
func safeRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '~', c == ':', c == '/', c == '+', c == '=', c == '-':
		default:
			return false
		}
	}
	return true
}
