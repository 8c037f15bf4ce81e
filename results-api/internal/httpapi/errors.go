package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/crowsnest-dev/crowsnest/results-api/internal/authn"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/hub"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/ingest"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/report"
	"github.com/crowsnest-dev/crowsnest/results-api/internal/store"
)

// apiError is an error with its HTTP status and stable code.
type apiError struct {
	status     int
	code       string
	msg        string
	retryAfter time.Duration // sent as Retry-After when set
	// refusal marks a 5xx that is a limit doing its job (not logged as
	// a failure; the limit_refusals_total metric counts it).
	refusal bool
}

func (e *apiError) Error() string { return e.msg }

func newError(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, msg: msg}
}

var (
	errNotFoundRoute    = newError(http.StatusNotFound, "not_found", "no such route")
	errMethodNotAllowed = newError(http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed")
	errUnauthorized     = newError(http.StatusUnauthorized, "unauthorized", "a bearer token is required")
	errForbidden        = newError(http.StatusForbidden, "forbidden", "the bearer token is not allowed to write")
)

// errorFor maps any error to its status, code and client-safe message.
// Internal errors are logged once here and reported without detail.
func errorFor(err error) *apiError {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	// Authentication comes before the context cases: an unreachable
	// TokenReview wraps the client's own (deadline) error.
	case errors.Is(err, authn.ErrAuthUnavailable):
		return newError(http.StatusServiceUnavailable, "auth_unavailable", "the token cannot be verified right now; retry later")
	case errors.Is(err, authn.ErrNoWriteKey):
		return newError(http.StatusForbidden, "forbidden", authn.ErrNoWriteKey.Error())
	case errors.Is(err, authn.ErrBadToken):
		return errForbidden
	case errors.Is(err, report.ErrInvalidDigest):
		return newError(http.StatusBadRequest, "invalid_digest", err.Error())
	case errors.Is(err, store.ErrRematchRefused):
		return newError(http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, store.ErrNotFound):
		return newError(http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, store.ErrBadCursor):
		return newError(http.StatusBadRequest, "invalid_query", err.Error())
	case errors.Is(err, ingest.ErrEmpty):
		return newError(http.StatusBadRequest, "empty_body", "the request has no body: send the CycloneDX JSON")
	case errors.Is(err, ingest.ErrTooManyFindings):
		return newError(http.StatusRequestEntityTooLarge, "too_many_findings", err.Error()+" findings; the limit is the server's --max-findings")
	case errors.Is(err, ingest.ErrTooLarge), errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, "too_large", err.Error())
	case errors.Is(err, ingest.ErrUnsupportedEncoding):
		return newError(http.StatusUnsupportedMediaType, "unsupported_media_type", err.Error())
	case errors.Is(err, ingest.ErrBadGzip):
		return newError(http.StatusBadRequest, "invalid_gzip", err.Error())
	case errors.Is(err, ingest.ErrBadZstd):
		return newError(http.StatusBadRequest, "invalid_zstd", err.Error())
	case errors.Is(err, ingest.ErrNotJSON):
		return newError(http.StatusBadRequest, "invalid_json", err.Error())
	case errors.Is(err, ingest.ErrNotCycloneDX):
		return newError(http.StatusBadRequest, "not_cyclonedx", err.Error())
	case errors.Is(err, ingest.ErrInvalidBOM):
		return newError(http.StatusBadRequest, "invalid_bom", err.Error())
	case errors.Is(err, store.ErrTimeout):
		return &apiError{status: http.StatusServiceUnavailable, code: "db_timeout",
			msg: "the database did not answer in time; retry later", retryAfter: 5 * time.Second}
	case errors.Is(err, hub.ErrTooManyFromAddr):
		return newError(http.StatusTooManyRequests, "too_many_connections", "too many WebSocket connections from this address")
	case errors.Is(err, hub.ErrTooManyClients), errors.Is(err, hub.ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, code: "too_many_connections",
			msg: "the server has no room for another WebSocket connection; retry later", retryAfter: 30 * time.Second, refusal: true}
	// Seldom seen by the client: its connection's deadline has passed.
	case errors.Is(err, ingest.ErrBodyTimeout):
		return newError(http.StatusRequestTimeout, "request_timeout", err.Error())
	case errors.Is(err, ingest.ErrIncomplete):
		return newError(http.StatusBadRequest, "incomplete_body", err.Error())
	case errors.Is(err, context.Canceled):
		return newError(499, "canceled", "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return newError(http.StatusServiceUnavailable, "timeout", "the request timed out")
	}
	return newError(http.StatusInternalServerError, "internal", "internal error")
}

type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"requestId,omitempty"`
	} `json:"error"`
}

// writeError writes err as the JSON error body. 5xx errors are logged.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := errorFor(err)
	if ae.status >= 500 && !ae.refusal {
		loggerFrom(r).ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
			"request_id", middleware.GetReqID(r.Context()), "error", err)
	}
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(ae.retryAfter))
	}
	var b errorBody
	b.Error.Code, b.Error.Message, b.Error.RequestID = ae.code, ae.msg, middleware.GetReqID(r.Context())
	writeJSON(w, ae.status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
